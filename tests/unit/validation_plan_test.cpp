// Validation batches as the validation pipeline delivers them (a probe sink in place of the
// val sink): Ultralytics' rectangular batch shapes, images ordered by aspect ratio,
// labels that stay on their objects through the letterbox; square batches on request; the
// transform that fits the images is the one named, and a transform or batcher that cannot
// serve is refused naming its JSON path.
#include <doctest/doctest.h>

#include <filesystem>

#include "support/coco_subset.h"
#include "support/paths.h"
#include "support/plugins.h"
#include "support/run_cli.h"
#include "runtime/pipeline/default_documents.h"
#include "training/eval/validation_pipeline.h"
#include "yoloflow/error.h"
#include "yoloflow/source.h"

using namespace yoloflow;

namespace {

// The batches a validation pipeline over `data`'s val split delivers, fitted by `transform`.
std::vector<json> delivered(core::PluginManager& pm, const std::string& dir, const std::string& data,
                            core::ValidationOptions options, const json& transform) {
  for (const char* lib : {"yolo_dataset", "letterbox", "collate", "detection_evaluator"}) test::load_plugin(pm, lib);
  pm.load(test::test_plugin_dir("batch_probe") + "/yoloflow_test_batch_probe.so");
  const std::string out = dir + "/batches-" + std::to_string(options.rect) + ".jsonl";
  std::filesystem::remove(out);
  core::ValidationStages stages;
  stages.source = {{"plugin", "yolo_dataset"}, {"params", {{"data", data}, {"split", "val"}}}};
  stages.transform = transform;
  stages.batcher = {{"plugin", "collate"}};
  stages.transform_path = "test.val_transform";
  stages.batcher_path = "test.val_batcher";
  stages.sink = {{"plugin", "batch_probe"}, {"params", {{"out", out}}}};
  StageContext ctx;
  ctx.workers = 2;
  core::ValidationPipeline validation(pm.registry(), stages, options, ctx, "test.validation");
  validation.run_batches(32);
  CHECK(validation.skipped() == 0);
  std::vector<json> batches;
  std::istringstream lines(test::read_file(out));
  for (std::string line; std::getline(lines, line);) batches.push_back(json::parse(line));
  CHECK(batches.size() == validation.batches());
  return batches;
}

const json kLetterbox = {{"plugin", "letterbox"}, {"params", {{"scaleup", false}}}};

}  // namespace

TEST_CASE("validation batches: Ultralytics' rectangular shape for a batch's aspect ratios") {
  // Landscape 640x480 (h/w 0.75): 0.75 * 640 / 32 + 0.5 = 15.5 -> 16 strides high; 21 wide.
  CHECK(core::rect_batch_shape(0.75, 0.75, 640, 32) == std::make_pair(512, 672));
  // Both orientations in one batch: square, half a stride of padding rounded up.
  CHECK(core::rect_batch_shape(0.6, 1.3, 640, 32) == std::make_pair(672, 672));
  // Portrait only: the width follows the least tall image (h/w 1.2 -> w 0.833).
  CHECK(core::rect_batch_shape(1.2, 1.5, 640, 32) == std::make_pair(672, 576));
  CHECK(core::rect_batch_shape(0.5, 0.5, 320, 32) == std::make_pair(192, 352));
}

TEST_CASE("validation batches: rect orders by aspect ratio, letterboxes each batch to its shape, labels follow") {
  core::PluginManager pm;
  const std::string dir = test::temp_dir("validation-plan");
  const std::string data = test::write_coco128_subset(dir, 12);
  test::ComponentSetup at_320;
  at_320.imgsz = 320;
  auto source =
      test::make_component<DataSource>(pm, Kind::Source, "yolo_dataset", {{"data", data}, {"split", "val"}}, at_320);
  std::vector<Sample> originals;
  for (std::size_t i = 0; i < source->size(); ++i) originals.push_back(source->load(i));

  SUBCASE("rect") {
    const auto batches = delivered(pm, dir, data, {320, 5, true, 32}, kLetterbox);
    REQUIRE(batches.size() == 3);  // 5 + 5 + 2
    double last_ar = 0;
    std::size_t images = 0;
    for (const json& b : batches) {
      const int h = b["height"], w = b["width"];
      const auto targets = b["targets"]["boxes"]["values"].get<std::vector<float>>();
      double lo = 1e9, hi = 0;
      for (std::size_t i = 0; i < b["samples"].size(); ++i) {
        const json& g = b["samples"][i];
        const double ar = g["original_height"].get<double>() / g["original_width"].get<double>();
        CHECK(ar >= last_ar);  // sorted by aspect ratio across the whole pass
        last_ar = ar;
        lo = std::min(lo, ar);
        hi = std::max(hi, ar);
        // Never enlarged: the source's pixels, only padded.
        const Sample& o = originals.at(g["index"].get<std::size_t>());
        CHECK(g["ratio_x"].get<double>() == doctest::Approx(o.geometry.ratio_x));
        // Each label, back in the source's pixels, is the source's box.
        std::vector<float> x1;
        for (std::size_t k = 0; k + 6 <= targets.size(); k += 6) {
          if (static_cast<std::size_t>(targets[k]) == i) x1.push_back(targets[k + 2] * w - targets[k + 4] * w / 2);
        }
        REQUIRE(x1.size() == o.boxes.size());
        for (std::size_t k = 0; k < x1.size(); ++k) {
          const double pad_x = g["pad_x"].get<double>() - o.geometry.pad_x;
          CHECK(x1[k] - pad_x == doctest::Approx(o.boxes[k].x1).epsilon(1e-4));
        }
      }
      CHECK(std::make_pair(h, w) == core::rect_batch_shape(lo, hi, 320, 32));
      images += b["samples"].size();
    }
    CHECK(images == source->size());
  }
  SUBCASE("square") {
    const auto batches = delivered(pm, dir, data, {320, 5, false, 32}, kLetterbox);
    REQUIRE(batches.size() == 3);
    CHECK(batches[0]["height"] == 320);
    CHECK(batches[0]["width"] == 320);
    CHECK(batches[0]["samples"][0]["index"] == 0);  // source order
    CHECK(batches[0]["samples"][4]["index"] == 4);
  }
}

TEST_CASE("validation batches: the transform named fits the images; what cannot serve is refused by its path") {
  core::PluginManager pm;
  for (const char* lib : {"yolo_dataset", "letterbox", "flip", "collate"}) test::load_plugin(pm, lib);
  pm.load(test::test_plugin_dir("stretch") + "/yoloflow_test_stretch.so");
  const std::string dir = test::temp_dir("validation-transform");
  const std::string data = test::write_coco128_subset(dir, 4);

  SUBCASE("another augmentation with height and width is honoured") {
    const auto batches = delivered(pm, dir, data, {320, 4, false, 32}, {{"plugin", "stretch"}});
    REQUIRE(batches.size() == 1);
    CHECK(batches[0]["height"] == 320);
    CHECK(batches[0]["width"] == 320);
    REQUIRE(batches[0]["samples"].size() == 4);
    for (const json& g : batches[0]["samples"]) {
      // Stretched to the whole square: no padding, each side scaled on its own (a letterbox pads).
      CHECK(g["pad_x"].get<double>() == doctest::Approx(0.0));
      CHECK(g["pad_y"].get<double>() == doctest::Approx(0.0));
      CHECK(g["original_width"].get<double>() * g["ratio_x"].get<double>() == doctest::Approx(320.0));
      CHECK(g["original_height"].get<double>() * g["ratio_y"].get<double>() == doctest::Approx(320.0));
    }
  }
  SUBCASE("the train sink's default transform (train-defaults.json) pads") {
    const auto batches = delivered(pm, dir, data, {320, 4, false, 32}, core::train_sink_default("val_transform"));
    bool padded = false;
    for (const json& g : batches.at(0)["samples"]) padded = padded || g["pad_x"].get<double>() > 0 || g["pad_y"].get<double>() > 0;
    CHECK(padded);  // coco128's images are not square
  }
  SUBCASE("an augmentation without height and width is refused, naming its JSON path") {
    CHECK_THROWS_WITH_AS(core::check_validation_transform(pm.registry(), {{"plugin", "flip"}}, "stages.train.params.val_transform"),
                         doctest::Contains("stages.train.params.val_transform.plugin: 'flip' has no `height` and `width`"),
                         InvalidInput);
  }
  SUBCASE("a plugin that is no augmentation is refused, naming its JSON path") {
    CHECK_THROWS_WITH_AS(
        core::check_validation_transform(pm.registry(), {{"plugin", "yolo_dataset"}}, "stages.train.params.val_transform"),
        doctest::Contains("stages.train.params.val_transform.plugin: 'yolo_dataset' is a source plugin"), InvalidInput);
  }
  SUBCASE("a validation batcher must be a batcher with an integer batch") {
    CHECK_THROWS_WITH_AS(
        core::check_validation_batcher(pm.registry(), {{"plugin", "letterbox"}}, "stages.train.params.val_batcher"),
        doctest::Contains("stages.train.params.val_batcher.plugin: 'letterbox' is an augmentation plugin"), InvalidInput);
  }
}
