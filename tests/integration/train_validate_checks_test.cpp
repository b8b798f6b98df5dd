// `yoloflow validate` refuses what the train sink would refuse when it starts, for parameter
// reasons, with the same message and full JSON path: a validation source it cannot find, a
// validation transform it cannot drive, `ema` against the `callbacks` list. Before, validate said
// "valid" and `train` stopped at its start.
#include <doctest/doctest.h>

#include <string>

#include "support/coco_subset.h"
#include "support/paths.h"
#include "support/run_cli.h"
#include "support/train_pipeline.h"

using namespace yoloflow;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// validate and train both refuse `file` with exit code 2 and `message`.
void check_both_refuse(const std::string& file, const std::string& dir, const std::string& message,
                       const std::string& plugin_path = "") {
  const std::string pp = plugin_path.empty() ? "" : "--plugin-path " + plugin_path + " ";
  const auto v = test::run_cli(pp + "validate " + file);
  INFO(v.output);
  CHECK(v.exit_code == 2);
  CHECK(contains(v.output, file + ": " + message));
  const auto t = test::run_cli(pp + "train " + file + " --run-dir " + dir + "/run", "OMP_NUM_THREADS=1 ");
  INFO(t.output);
  CHECK(t.exit_code == 2);
  CHECK(contains(t.output, message));
}

}  // namespace

TEST_CASE("validate refuses ema false with the ema callback listed, as train does") {
  const auto dir = test::temp_dir("validate-ema");
  test::write_coco128_subset(dir, 4);
  test::TrainPipeline p;
  p.train = R"("ema": false, "callbacks": [{"plugin": "ema"}])";
  test::write_file(dir + "/p.json", p.json());
  check_both_refuse(dir + "/p.json", dir,
                    "stages.train.params.ema is false but stages.train.params.callbacks.0 is the ema callback: remove one "
                    "of them");
  test::remove_tree(dir);
}

TEST_CASE("validate refuses a validation transform without height and width, as train does") {
  const auto dir = test::temp_dir("validate-val-transform");
  test::write_coco128_subset(dir, 4);
  test::TrainPipeline p;
  p.train = R"("val_transform": {"plugin": "flip"})";
  test::write_file(dir + "/p.json", p.json());
  check_both_refuse(dir + "/p.json", dir,
                    "stages.train.params.val_transform.plugin: 'flip' has no `height` and `width` parameters");
  test::remove_tree(dir);
}

TEST_CASE("validate refuses a train stage with no validation source to share, as train does") {
  const auto dir = test::temp_dir("validate-val-source");
  const auto data = test::write_coco128_subset(dir, 4);
  // The synthetic source has no `split`: the train sink cannot validate with it.
  test::write_file(dir + "/p.json", R"({"epochs": 1, "imgsz": 64, "device": "cpu", "stages": {
    "source": {"plugin": "synthetic_source"},
    "letterbox": {"plugin": "letterbox", "input": "source"},
    "batch": {"plugin": "collate", "input": "letterbox", "params": {"batch": 2}},
    "train": {"plugin": "train", "input": "batch", "params": {"data": "data.yaml", "scheduler": {"plugin": "linear"}}}}})");
  check_both_refuse(dir + "/p.json", dir,
                    "stages.train.params.val_source: no source to validate from: the pipeline has no single source stage "
                    "whose schema declares a split parameter",
                    test::test_plugin_dir("synthetic"));
  test::remove_tree(dir);
}
