// Validation batches: Ultralytics' rectangular batch shapes, images ordered by aspect ratio,
// labels that stay on their objects through the letterbox; square batches on request; the
// transform that fits the images is the one named, checked before any image is read.
#include <doctest/doctest.h>

#include <filesystem>

#include "support/coco_subset.h"
#include "support/paths.h"
#include "support/plugins.h"
#include "support/run_cli.h"
#include "train/validation_loader.h"
#include "yoloflow/error.h"
#include "yoloflow/source.h"

using namespace yoloflow;

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
  for (const char* lib : {"yolo_dataset", "letterbox"}) test::load_plugin(pm, lib);
  const std::string dir = test::temp_dir("validation-loader");
  const std::string data = test::write_coco128_subset(dir, 12);
  auto source = test::make_component<DataSource>(pm, Kind::Source, "yolo_dataset", {{"data", data}, {"split", "val"}},
                                                 {320});
  std::vector<Sample> originals;
  for (std::size_t i = 0; i < source->size(); ++i) originals.push_back(source->load(i));

  SUBCASE("rect") {
    core::ValidationLoader loader(pm.registry(), *source, {320, 5, true, 32}, "test.validation");
    REQUIRE(loader.batches() == 3);  // 5 + 5 + 2
    double last_ar = 0;
    std::size_t images = 0;
    for (std::size_t b = 0; b < loader.batches(); ++b) {
      const core::ValidationBatch vb = loader.load(b);
      const auto [h, w] = loader.shape(b);
      CHECK(vb.pixels.size(1) == h);
      CHECK(vb.pixels.size(2) == w);
      double lo = 1e9, hi = 0;
      for (std::size_t i = 0; i < vb.samples.size(); ++i) {
        const auto& g = vb.samples[i].geometry;
        const double ar = static_cast<double>(g.original_height) / g.original_width;
        CHECK(ar >= last_ar);  // sorted by aspect ratio across the whole pass
        last_ar = ar;
        lo = std::min(lo, ar);
        hi = std::max(hi, ar);
        // Never enlarged: the source's pixels, only padded.
        const Sample& o = originals.at(vb.samples[i].index);
        CHECK(g.ratio_x == doctest::Approx(o.geometry.ratio_x));
        // Each label, back in the source's pixels, is the source's box.
        std::vector<std::array<float, 4>> labels;
        for (std::int64_t k = 0; k < vb.rows.size(0); ++k) {
          if (vb.rows[k][0].item<int>() != static_cast<int>(i)) continue;
          const float cx = vb.rows[k][2].item<float>() * w, bw = vb.rows[k][4].item<float>() * w;
          labels.push_back({cx - bw / 2, 0, 0, 0});
        }
        REQUIRE(labels.size() == o.boxes.size());
        for (std::size_t k = 0; k < labels.size(); ++k) {
          const double pad_x = g.pad_x - o.geometry.pad_x;
          CHECK(labels[k][0] - pad_x == doctest::Approx(o.boxes[k].x1).epsilon(1e-4));
        }
      }
      CHECK(std::make_pair(h, w) == core::rect_batch_shape(lo, hi, 320, 32));
      images += vb.samples.size();
    }
    CHECK(images == source->size());
    CHECK(loader.skipped() == 0);
  }
  SUBCASE("square") {
    core::ValidationLoader loader(pm.registry(), *source, {320, 5, false, 32}, "test.validation");
    REQUIRE(loader.batches() == 3);
    const core::ValidationBatch vb = loader.load(0);
    CHECK(vb.pixels.size(1) == 320);
    CHECK(vb.pixels.size(2) == 320);
    CHECK(vb.samples[0].index == 0);  // source order
    CHECK(vb.samples[4].index == 4);
  }
}

TEST_CASE("validation batches: the transform the options name fits the images, not a built-in letterbox") {
  core::PluginManager pm;
  for (const char* lib : {"yolo_dataset", "letterbox", "flip"}) test::load_plugin(pm, lib);
  pm.load(test::test_plugin_dir("stretch") + "/yoloflow_test_stretch.so");
  const std::string dir = test::temp_dir("validation-transform");
  const std::string data = test::write_coco128_subset(dir, 4);
  auto source = test::make_component<DataSource>(pm, Kind::Source, "yolo_dataset", {{"data", data}, {"split", "val"}},
                                                 {320});

  SUBCASE("another augmentation with height and width is honoured") {
    core::ValidationOptions o{320, 4, false, 32};
    o.transform = {{"plugin", "stretch"}};
    o.transform_path = "stages.train.params.val_transform";
    core::ValidationLoader loader(pm.registry(), *source, o, "test.validation");
    const core::ValidationBatch vb = loader.load(0);
    REQUIRE(vb.samples.size() == 4);
    CHECK(vb.pixels.size(1) == 320);
    CHECK(vb.pixels.size(2) == 320);
    for (const auto& s : vb.samples) {
      // Stretched to the whole square: no padding, each side scaled on its own (a letterbox pads).
      CHECK(s.geometry.pad_x == doctest::Approx(0.0));
      CHECK(s.geometry.pad_y == doctest::Approx(0.0));
      CHECK(s.geometry.original_width * s.geometry.ratio_x == doctest::Approx(320.0));
      CHECK(s.geometry.original_height * s.geometry.ratio_y == doctest::Approx(320.0));
    }
  }
  SUBCASE("no transform named: train-defaults.json's, which pads") {
    core::ValidationLoader loader(pm.registry(), *source, {320, 4, false, 32}, "test.validation");
    const core::ValidationBatch vb = loader.load(0);
    bool padded = false;
    for (const auto& s : vb.samples) padded = padded || s.geometry.pad_x > 0 || s.geometry.pad_y > 0;
    CHECK(padded);  // coco128's images are not square
  }
  SUBCASE("an augmentation without height and width is refused, naming its JSON path") {
    core::ValidationOptions o{320, 4, false, 32};
    o.transform = {{"plugin", "flip"}};
    o.transform_path = "stages.train.params.val_transform";
    CHECK_THROWS_WITH_AS(core::ValidationLoader(pm.registry(), *source, o, "test.validation"),
                         doctest::Contains("stages.train.params.val_transform.plugin: 'flip' has no `height` and `width`"),
                         InvalidInput);
  }
  SUBCASE("a plugin that is no augmentation is refused, naming its JSON path") {
    core::ValidationOptions o{320, 4, false, 32};
    o.transform = {{"plugin", "yolo_dataset"}};
    o.transform_path = "stages.train.params.val_transform";
    CHECK_THROWS_WITH_AS(core::ValidationLoader(pm.registry(), *source, o, "test.validation"),
                         doctest::Contains("stages.train.params.val_transform.plugin: 'yolo_dataset' is a source plugin"),
                         InvalidInput);
  }
}
