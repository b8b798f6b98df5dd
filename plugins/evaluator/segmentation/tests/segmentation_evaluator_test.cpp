// The segmentation evaluator against Ultralytics 8.4.56's SegmentationValidator on the same
// validation batch (tests/fixtures/ultralytics-8.4.56-seg-metrics.pt, made by
// tests/fixtures/make-ultralytics-seg-metrics.py with its own code): box and mask P, R, mAP50,
// mAP50-95 and fitness, each class's AP at the ten thresholds and its P and R, for mask targets
// in both layouts and at mask ratios 1, 2 and 4; the SDK's evaluator contract on a YOLO11-seg
// model; and what it refuses.
#include <map>
#include <string>
#include <vector>

#include "support/paths.h"
#include "support/plugin_set.h"
#include "support/tensor_fixture.h"
#include "yoloflow/error.h"
#include "yoloflow/evaluator.h"
#include "yoloflow/model.h"
#include "yoloflow/testing_torch.h"
#include "support/doctest_checks.h"  // last: CHECK is doctest's after LibTorch's headers

using namespace yoloflow;

namespace {

const std::map<std::string, torch::Tensor>& fixture() {
  static const std::map<std::string, torch::Tensor> tensors =
      test::read_tensor_dict(std::string(YOLOFLOW_SOURCE_DIR) + "/tests/fixtures/ultralytics-8.4.56-seg-metrics.pt");
  return tensors;
}

HeadDescription seg_head() {
  HeadDescription h;
  h.nc = 3;
  h.strides = {8, 16, 32};
  h.task = "segment";
  h.outputs = {{"mask_coefficients", true, 32, ""}, {"prototypes", false, 32, ""}};
  return h;
}

// The evaluator from its library (yoloflow_segmentation_evaluator.so), not set up.
std::unique_ptr<Evaluator> new_evaluator() {
  plugin_test::ComponentSetup setup;
  setup.library = "segmentation_evaluator";
  return plugin_test::make_component<Evaluator>(plugin_test::plugins_with("segmentation_evaluator"), Kind::Evaluator,
                                                "segmentation", json::object(), setup);
}

std::unique_ptr<Evaluator> make_evaluator(const HeadDescription& head = seg_head()) {
  auto e = new_evaluator();
  e->setup(head);
  return e;
}

std::vector<float> values_of(const torch::Tensor& t) {
  const auto c = t.to(torch::kFloat).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

// The fixture's batch (3 images of 96 x 128) with the masks of `case_name` under its layout's name.
Batch fixture_batch(const std::string& case_name) {
  const auto& f = fixture();
  Batch b;
  b.size = 3;
  b.height = 96;
  b.width = 128;
  b.pixels = std::shared_ptr<std::uint8_t>(new std::uint8_t[3 * 96 * 128 * 3](), std::default_delete<std::uint8_t[]>());
  const auto n = f.at("cls").size(0);
  b.boxes() = TargetArray{{n, 6}, values_of(torch::cat({f.at("batch_idx").view({n, 1}), f.at("cls").view({n, 1}),
                                                        f.at("bboxes")}, 1))};
  const auto& masks = f.at(case_name + ".masks");
  const bool overlap = case_name.rfind("overlap", 0) == 0;
  b.targets[overlap ? "image_masks" : "masks"] = TargetArray{masks.sizes().vec(), values_of(masks)};
  b.samples.resize(3);
  return b;
}

std::vector<ImagePredictions> fixture_predictions() {
  const auto& f = fixture();
  std::vector<ImagePredictions> out(3);
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i].boxes = f.at("pred." + std::to_string(i));
    out[i].extras["mask_coefficients"] = f.at("coef." + std::to_string(i));
    out[i].extras["prototypes"] = f.at("prototypes")[static_cast<std::int64_t>(i)];
  }
  return out;
}

}  // namespace

TEST_CASE("segmentation evaluator: box and mask metrics equal Ultralytics' SegmentationValidator on the same batch") {
  const char* columns[] = {"metrics/precision(B)", "metrics/recall(B)", "metrics/mAP50(B)", "metrics/mAP50-95(B)",
                           "metrics/precision(M)", "metrics/recall(M)", "metrics/mAP50(M)", "metrics/mAP50-95(M)"};
  const auto& f = fixture();
  for (const std::string case_name : {"overlap_r4", "overlap_r2", "separate_r4", "separate_r1"}) {
    CAPTURE(case_name);
    auto evaluator = make_evaluator();
    evaluator->reset();
    evaluator->add_batch(fixture_batch(case_name), fixture_predictions());
    const Evaluation e = evaluator->compute();
    const auto expected = f.at(case_name + ".results");  // 8 columns, fitness
    for (int k = 0; k < 8; ++k) {
      CAPTURE(columns[k]);
      CHECK(e.columns.at(columns[k]) == doctest::Approx(expected[k].item<double>()).epsilon(1e-9));
      CHECK(e.all.at(static_cast<std::size_t>(k)) == doctest::Approx(expected[k].item<double>()).epsilon(1e-9));
    }
    CHECK(e.fitness == doctest::Approx(expected[8].item<double>()).epsilon(1e-9));
    CHECK(e.images == 3);
    CHECK(e.instances == 7);
    // Per class: AP50 and AP50-95 of boxes and masks, P and R of each.
    const auto classes = f.at(case_name + ".classes");
    REQUIRE(e.per_class.size() == static_cast<std::size_t>(classes.size(0)));
    for (std::size_t k = 0; k < e.per_class.size(); ++k) {
      const auto i = static_cast<std::int64_t>(k);
      const ClassEvaluation& c = e.per_class[k];
      CHECK(c.cls == classes[i].item<std::int64_t>());
      const auto box_ap = f.at(case_name + ".box.ap")[i], seg_ap = f.at(case_name + ".seg.ap")[i];
      const auto box_pr = f.at(case_name + ".box.pr")[i], seg_pr = f.at(case_name + ".seg.pr")[i];
      const std::vector<double> want = {box_pr[0].item<double>(), box_pr[1].item<double>(),
                                        box_ap[0].item<double>(), box_ap.mean().item<double>(),
                                        seg_pr[0].item<double>(), seg_pr[1].item<double>(),
                                        seg_ap[0].item<double>(), seg_ap.mean().item<double>()};
      for (std::size_t v = 0; v < want.size(); ++v) CHECK(c.values.at(v) == doctest::Approx(want[v]).epsilon(1e-9));
    }
  }
}

TEST_CASE("segmentation evaluator: the same result whatever the batches the images arrive in") {
  // Image by image (three batches of one) gives what the batch of three gives.
  auto whole = make_evaluator();
  whole->reset();
  whole->add_batch(fixture_batch("separate_r4"), fixture_predictions());
  const Evaluation all = whole->compute();
  auto split = make_evaluator();
  split->reset();
  const Batch b = fixture_batch("separate_r4");
  const auto predictions = fixture_predictions();
  const auto& boxes = b.boxes().values;
  const auto& masks = b.target("masks");
  const std::int64_t plane = masks.shape[1] * masks.shape[2];
  for (std::int64_t i = 0; i < 3; ++i) {
    Batch one;
    one.size = 1;
    one.height = b.height;
    one.width = b.width;
    one.pixels = b.pixels;
    one.samples.resize(1);
    std::vector<float> rows, planes;
    for (std::size_t k = 0; k + 6 <= boxes.size(); k += 6) {
      if (static_cast<std::int64_t>(boxes[k]) != i) continue;
      rows.push_back(0.0f);
      rows.insert(rows.end(), boxes.begin() + static_cast<std::ptrdiff_t>(k) + 1, boxes.begin() + static_cast<std::ptrdiff_t>(k) + 6);
      const auto first = masks.values.begin() + static_cast<std::ptrdiff_t>(k / 6) * plane;
      planes.insert(planes.end(), first, first + plane);
    }
    const auto n = static_cast<std::int64_t>(rows.size() / 6);
    one.boxes() = TargetArray{{n, 6}, rows};
    one.targets["masks"] = TargetArray{{n, masks.shape[1], masks.shape[2]}, planes};
    split->add_batch(one, {predictions[static_cast<std::size_t>(i)]});
  }
  const Evaluation parts = split->compute();
  CHECK(parts.columns == all.columns);
  CHECK(parts.fitness == all.fitness);
}

TEST_CASE("segmentation evaluator: the SDK's evaluator contract on YOLO11n-seg; its columns and table") {
  auto model = plugin_test::make_component<Model>(plugin_test::plugins_with("yolo11"), Kind::Model, "yolo11",
                                                  {{"nc", 3}, {"task", "segment"}});
  auto evaluator = make_evaluator(model->head());
  Batch batch = testing::detail::evaluation_batch();
  const std::int64_t h = batch.height / 4, w = batch.width / 4;
  std::vector<float> planes(static_cast<std::size_t>(batch.size * h * w), 0.0f);
  for (std::int64_t y = 2; y < 8; ++y) {
    for (std::int64_t x = 2; x < 8; ++x) planes[static_cast<std::size_t>(y * w + x)] = 1.0f;
  }
  batch.targets["image_masks"] = TargetArray{{batch.size, h, w}, planes};
  CHECK(testing::evaluator_contract(*evaluator, *model, batch).empty());
  const auto columns = evaluator->columns();
  REQUIRE(columns.size() == 8);
  CHECK(columns[3] == "metrics/mAP50-95(B)");
  CHECK(columns[7] == "metrics/mAP50-95(M)");
  const auto table = evaluator->table();
  REQUIRE(table.size() == 8);
  CHECK(table[0].header == "Box(P");
  CHECK(table[4].header == "Mask(P");
  CHECK(table[7].key == "mask_mAP50-95");
}

TEST_CASE("segmentation evaluator: refuses a head without masks and a batch without mask targets, in one line") {
  HeadDescription detect;
  detect.nc = 3;
  detect.strides = {8, 16, 32};
  auto e = new_evaluator();
  try {
    e->setup(detect);
    FAIL("a detection head was accepted");
  } catch (const InvalidInput& err) {
    CHECK(std::string(err.what()).find("'mask_coefficients'") != std::string::npos);
    CHECK(std::string(err.what()).find("its evaluator is 'detection'") != std::string::npos);
  }
  auto evaluator = make_evaluator();
  evaluator->reset();
  Batch b = fixture_batch("overlap_r4");
  b.targets.erase("image_masks");
  try {
    evaluator->add_batch(b, fixture_predictions());
    FAIL("a batch without masks was accepted");
  } catch (const InvalidInput& err) {
    CHECK(std::string(err.what()) ==
          "segmentation: the validation batch has no masks ('image_masks' or 'masks' targets; it has: boxes): give the "
          "val batcher masks=true (collate rasterises the instances' outlines)");
  }
  Batch wrong = fixture_batch("overlap_r4");
  wrong.targets["image_masks"].shape = {2, 24, 48};
  try {
    evaluator->add_batch(wrong, fixture_predictions());
    FAIL("masks of another batch size were accepted");
  } catch (const InvalidInput& err) {
    CHECK(std::string(err.what()).find("should be 3 planes (one per image)") != std::string::npos);
  }
}
