// YOLO11-seg trained as a user runs it: the shipped pipeline on coco128-seg's images and polygon
// labels (real data), the augmentations moving the outlines, the batcher rasterising them, the
// segmentation loss training the mask branch, the segmentation evaluator's box and mask metrics;
// results.csv with Ultralytics' segmentation columns; Ultralytics' words (model=yolo11n-seg.yaml
// on the built-in recipe, overlap_mask, mask_ratio, a detector's name on a segmentation
// pipeline); `yoloflow val` of the run's weights; and a segmentation loss behind a batcher that
// does not pack outlines refused before anything runs.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/run/results_csv.h"
#include "support/coco_subset.h"
#include "support/output_checks.h"
#include "support/paths.h"
#include "support/run_cli.h"
#include "yoloflow/error.h"

using namespace yoloflow;
using test::contains;

namespace {

std::string seg_data() { return test::shared_dir() + "/datasets/coco128-seg/data.yaml"; }
std::string seg_pipeline() { return std::string(YOLOFLOW_SOURCE_DIR) + "/pipelines/train-coco128-seg-cpu.json"; }

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// Ultralytics 8.4.56's results.csv columns of a segmentation run, in its order, up to the lrs.
const std::vector<std::string>& ultralytics_seg_columns() {
  static const std::vector<std::string> c = {
      "epoch", "time", "train/box_loss", "train/seg_loss", "train/cls_loss", "train/dfl_loss", "train/sem_loss",
      "metrics/precision(B)", "metrics/recall(B)", "metrics/mAP50(B)", "metrics/mAP50-95(B)", "metrics/precision(M)",
      "metrics/recall(M)", "metrics/mAP50(M)", "metrics/mAP50-95(M)", "val/box_loss", "val/seg_loss", "val/cls_loss",
      "val/dfl_loss", "val/sem_loss", "lr/pg0", "lr/pg1", "lr/pg2"};
  return c;
}

void check_seg_results(const std::string& results_csv, std::size_t epochs) {
  core::ResultsCsv csv(results_csv);
  csv.load();
  const auto& want = ultralytics_seg_columns();
  REQUIRE(csv.columns().size() > want.size());
  CHECK(std::vector<std::string>(csv.columns().begin(), csv.columns().begin() + static_cast<std::ptrdiff_t>(want.size())) ==
        want);
  REQUIRE(csv.rows().size() == epochs);
  for (const auto& row : csv.rows()) {
    for (const auto& column : want) {
      CAPTURE(column);
      CHECK(std::isfinite(row.at(column)));
    }
    // Ultralytics' fitness of a segmentation model: box mAP50-95 + mask mAP50-95.
    CHECK(row.at("fitness") == doctest::Approx(row.at("metrics/mAP50-95(B)") + row.at("metrics/mAP50-95(M)")).epsilon(1e-4));
  }
}

// The resolved pipeline `validate --print-resolved` prints for `words` on the seg pipeline.
nlohmann::json resolved(const std::string& pipeline, const std::string& words) {
  const auto r = test::run_cli("validate " + pipeline + " data=" + seg_data() + " " + words + " --print-resolved");
  INFO(r.output);
  REQUIRE(r.exit_code == kExitOk);
  const auto begin = r.output.find('{');
  REQUIRE(begin != std::string::npos);
  return nlohmann::json::parse(r.output.substr(begin, r.output.rfind('}') - begin + 1));
}

}  // namespace

TEST_CASE("segmentation: train-coco128-seg-cpu trains YOLO11n-seg on coco128-seg's polygons, loss columns as Ultralytics'") {
  const auto dir = test::temp_dir("seg-train");
  const std::string run = dir + "/run";
  // 16 images (fraction 1/8) at 128 px, two epochs, batch 8: minutes become seconds.
  const auto r = test::run_cli("train " + seg_pipeline() + " data=" + seg_data() + " --run-dir " + run +
                                   " imgsz=128 epochs=2 fraction=0.125 workers=1 stages.batch.params.batch=8",
                               "OMP_NUM_THREADS=1 ");
  INFO(r.output);
  REQUIRE(r.exit_code == kExitOk);
  check_seg_results(run + "/results.csv", 2);
  core::ResultsCsv csv(run + "/results.csv");
  csv.load();
  for (const auto& row : csv.rows()) {
    for (const char* column : {"train/seg_loss", "val/seg_loss"}) {
      CAPTURE(column);
      CHECK(std::isfinite(row.at(column)));
      CHECK(row.at(column) > 0);  // positives found, masks compared
    }
    CHECK(row.at("train/sem_loss") == 0);  // YOLO11-seg has no semantic branch
  }
  CHECK(contains(r.output, "yolo11n-seg"));
  CHECK(contains(r.output, "final validation: P "));
  CHECK(contains(r.output, "Mask mAP50-95 "));
  CHECK(std::filesystem::exists(run + "/weights/best.pt"));
  test::remove_tree(dir);
}

TEST_CASE("segmentation: model=yolo11n-seg.yaml trains Ultralytics' recipe with masks, the seg loss and evaluator; val reads them back") {
  const auto dir = test::temp_dir("seg-words");
  const std::string run = dir + "/run";
  // No pipeline file: the built-in recipe, as `yolo train model=yolo11n-seg.yaml data=...`.
  const auto r = test::run_cli("train model=yolo11n-seg.yaml data=" + seg_data() + " --run-dir " + run +
                                   " imgsz=96 epochs=1 fraction=0.0625 workers=1 batch=8",
                               "OMP_NUM_THREADS=1 ");
  INFO(r.output);
  REQUIRE(r.exit_code == kExitOk);
  const auto pipeline = read_json(run + "/pipeline.json");
  const auto& train = pipeline["stages"]["train"]["params"];
  CHECK(train["model"]["params"]["task"] == "segment");
  CHECK(train["loss"]["plugin"] == "yolo11_segmentation");
  CHECK(train["evaluator"]["plugin"] == "segmentation");
  CHECK(train["val_batcher"]["params"]["masks"] == true);
  CHECK(pipeline["stages"]["batch"]["params"]["masks"] == true);
  check_seg_results(run + "/results.csv", 1);

  // `yoloflow val` of the run's weights: the evaluator and the masks the run recorded.
  const auto v = test::run_cli("val model=" + run + "/weights/best.pt data=" + seg_data() +
                                   " imgsz=96 project=" + dir + " name=val",
                               "OMP_NUM_THREADS=1 ");
  INFO(v.output);
  REQUIRE(v.exit_code == kExitOk);
  CHECK(contains(v.output, "Box(P"));
  CHECK(contains(v.output, "Mask(P"));
  const auto metrics = read_json(dir + "/val/metrics.json");
  for (const char* key : {"mAP50-95", "mask_precision", "mask_recall", "mask_mAP50", "mask_mAP50-95"}) {
    CAPTURE(key);
    CHECK(metrics.contains(key));
  }
  CHECK(metrics["fitness"].get<double>() ==
        doctest::Approx(metrics["mAP50-95"].get<double>() + metrics["mask_mAP50-95"].get<double>()));
  test::check_no_internals(v.output);
  test::remove_tree(dir);
}

TEST_CASE("segmentation: overlap_mask and mask_ratio set every mask batcher; a detector's name makes the pipeline a detector's") {
  const auto words = resolved(seg_pipeline(), "overlap_mask=False mask_ratio=2");
  const auto& batch = words["stages"]["batch"]["params"];
  const auto& val = words["stages"]["train"]["params"]["val_batcher"]["params"];
  CHECK(batch["overlap_mask"] == false);
  CHECK(batch["mask_ratio"] == 2);
  CHECK(val["overlap_mask"] == false);
  CHECK(val["mask_ratio"] == 2);

  // model=yolo11s on the segmentation pipeline: a detector, with the detection loss and
  // evaluator and no masks to make; yolo11s-seg keeps it a segmentation pipeline.
  const auto detector = resolved(seg_pipeline(), "model=yolo11s");
  const auto& train = detector["stages"]["train"]["params"];
  CHECK(train["model"]["params"]["task"] == "detect");
  CHECK(train["loss"]["plugin"] == "yolo11_detection");
  CHECK(train["evaluator"]["plugin"] == "detection");
  CHECK(train["val_batcher"]["params"]["masks"] == false);
  CHECK(detector["stages"]["batch"]["params"]["masks"] == false);
  const auto seg = resolved(seg_pipeline(), "model=yolo11s-seg");
  CHECK(seg["stages"]["train"]["params"]["model"]["params"]["scale"] == "s");
  CHECK(seg["stages"]["train"]["params"]["loss"]["plugin"] == "yolo11_segmentation");
  CHECK(seg["stages"]["batch"]["params"]["masks"] == true);
}

TEST_CASE("segmentation: task=segment and a leading `segment` make the pipeline a segmentation one; another task is refused") {
  const std::string detect = std::string(YOLOFLOW_SOURCE_DIR) + "/pipelines/train-coco128-cpu.json";
  for (const std::string words : {"task=segment", "task=segment model=yolo11s-seg"}) {
    CAPTURE(words);
    const auto doc = resolved(detect, words);
    const auto& train = doc["stages"]["train"]["params"];
    CHECK(train["model"]["params"]["task"] == "segment");
    CHECK(train["loss"]["plugin"] == "yolo11_segmentation");
    CHECK(train["evaluator"]["plugin"] == "segmentation");
    CHECK(doc["stages"]["batch"]["params"]["masks"] == true);
  }
  // `yoloflow segment validate ...` as `yolo segment train ...`.
  auto r = test::run_cli("segment validate " + detect + " data=" + seg_data() + " --print-resolved");
  INFO(r.output);
  REQUIRE(r.exit_code == kExitOk);
  const auto doc = nlohmann::json::parse(r.output.substr(r.output.find('{'), r.output.rfind('}') - r.output.find('{') + 1));
  CHECK(doc["stages"]["train"]["params"]["loss"]["plugin"] == "yolo11_segmentation");
  // A model of another task disagrees; a task without built-in components is refused.
  r = test::run_cli("validate " + detect + " data=" + seg_data() + " task=segment model=yolo11n");
  INFO(r.output);
  CHECK(r.exit_code == kExitInvalid);
  CHECK(contains(r.output, "task=segment, but model=yolo11n is a detect model: name the model of the task "
                           "(yolo11n-seg) or leave task= out"));
  r = test::run_cli("pose train data=" + seg_data());
  CHECK(r.exit_code == kExitInvalid);
  CHECK(contains(r.output, "`pose`: yoloflow does the tasks detect and segment"));
  test::check_no_internals(r.output);
}

TEST_CASE("segmentation: a model word leaves the loss, evaluator and masks the command line sets in place") {
  // square_probe (a test plugin's loss) set before the model word, masks after it: both kept.
  const auto r = test::run_cli("--plugin-path " + test::test_plugin_dir("loss_probe") + " validate " + seg_pipeline() +
                               " data=" + seg_data() + " stages.train.params.loss.plugin=square_probe model=yolo11n" +
                               " stages.batch.params.masks=true --print-resolved");
  INFO(r.output);
  REQUIRE(r.exit_code == kExitOk);
  const auto doc = nlohmann::json::parse(r.output.substr(r.output.find('{'), r.output.rfind('}') - r.output.find('{') + 1));
  const auto& train = doc["stages"]["train"]["params"];
  CHECK(train["loss"]["plugin"] == "square_probe");
  CHECK(train["evaluator"]["plugin"] == "detection");
  CHECK(doc["stages"]["batch"]["params"]["masks"] == true);
  CHECK(train["val_batcher"]["params"]["masks"] == false);
}

TEST_CASE("segmentation: a parameter of the task's loss given after the model word is set on that loss") {
  // The detection recipe names no loss (its default): model=yolo11n-seg.yaml makes it the
  // segmentation loss, and loss.params.* words set that one's parameters.
  const auto doc = resolved(std::string(YOLOFLOW_SOURCE_DIR) + "/pipelines/max-throughput-coco128.json",
                            "model=yolo11n-seg.yaml stages.train.params.loss.params.mask_chunk=131072");
  const auto& loss = doc["stages"]["train"]["params"]["loss"];
  CHECK(loss["plugin"] == "yolo11_segmentation");
  CHECK(loss["params"]["mask_chunk"] == 131072);
}

TEST_CASE("segmentation: a segmentation loss behind a batcher that packs no outlines is refused before the run") {
  const auto dir = test::temp_dir("seg-refused");
  // The keypoint test plugin's box_batcher packs boxes only.
  const auto r = test::run_cli("--plugin-path " + test::test_plugin_dir("annotated") + " train " + seg_pipeline() +
                               " data=" + seg_data() + " --run-dir " + dir + "/run stages.batch.plugin=box_batcher");
  INFO(r.output);
  CHECK(r.exit_code == kExitInvalid);
  CHECK(contains(r.output, "stages.batch.plugin: batcher 'box_batcher' packs boxes"));
  CHECK(contains(r.output, "not polygons, which loss 'yolo11_segmentation' (stages.train.params.loss) needs"));
  CHECK_FALSE(std::filesystem::exists(dir + "/run"));
  test::check_no_internals(r.output);
  test::remove_tree(dir);
}

TEST_CASE("segmentation: overlap_mask= and mask_ratio= on a pipeline whose batchers make no masks are refused in one line") {
  const auto dir = test::temp_dir("seg-mask-words");
  std::string pipeline = test::read_file(test::write_inspect_pipeline(dir, 1, "[]"));
  pipeline.replace(pipeline.find("\"collate\""), 9, "\"box_batcher\"");
  test::write_file(dir + "/boxes.json", pipeline);
  for (const std::string word : {"overlap_mask=False", "mask_ratio=2"}) {
    CAPTURE(word);
    const auto r = test::run_cli("--plugin-path " + test::test_plugin_dir("annotated") + " validate " + dir +
                                 "/boxes.json " + word);
    INFO(r.output);
    CHECK(r.exit_code == kExitInvalid);
    const std::string key = word.substr(0, word.find('='));
    CHECK(contains(r.output, key + "=: no batcher of this pipeline makes mask targets"));
    test::check_no_internals(r.output);
  }
  test::remove_tree(dir);
}
