// YOLO11-seg trained as a user runs it: the shipped pipeline on coco128-seg's images and polygon
// labels (real data), the augmentations moving the outlines, the batcher rasterising them, the
// segmentation loss training the mask branch; results.csv with Ultralytics' segmentation loss
// columns; and a segmentation loss behind a batcher that does not pack outlines refused before
// anything runs.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "runtime/run/results_csv.h"
#include "support/output_checks.h"
#include "support/paths.h"
#include "support/run_cli.h"
#include "yoloflow/error.h"

using namespace yoloflow;
using test::contains;

namespace {

std::string seg_data() { return test::shared_dir() + "/datasets/coco128-seg/data.yaml"; }
std::string seg_pipeline() { return std::string(YOLOFLOW_SOURCE_DIR) + "/pipelines/train-coco128-seg-cpu.json"; }

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
  core::ResultsCsv csv(run + "/results.csv");
  csv.load();
  const std::vector<std::string> want = {"epoch", "time", "train/box_loss", "train/seg_loss", "train/cls_loss",
                                         "train/dfl_loss", "train/sem_loss"};
  REQUIRE(csv.columns().size() > want.size());
  CHECK(std::vector<std::string>(csv.columns().begin(), csv.columns().begin() + want.size()) == want);
  REQUIRE(csv.rows().size() == 2);
  for (const auto& row : csv.rows()) {
    for (const char* column : {"train/seg_loss", "val/seg_loss"}) {
      CAPTURE(column);
      CHECK(std::isfinite(row.at(column)));
      CHECK(row.at(column) > 0);  // positives found, masks compared
    }
    CHECK(row.at("train/sem_loss") == 0);  // YOLO11-seg has no semantic branch
  }
  CHECK(contains(r.output, "yolo11n-seg"));
  CHECK(std::filesystem::exists(run + "/weights/best.pt"));
  test::remove_tree(dir);
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
