// The train sink's loss as a user configures it: a loss plugin named in the pipeline is what
// training minimises, logs and writes to results.csv; the built-in loss's gains are its
// parameters (set by box= cls= dfl= words too), and the sink's old gain parameters are
// refused at their path, naming the new one. Tiny settings (8 coco128 images, imgsz 64,
// batch 2: 4 batches an epoch) keep it fast.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

#include "support/coco_subset.h"
#include "support/paths.h"
#include "support/run_cli.h"
#include "support/train_pipeline.h"
#include "runtime/run/results_csv.h"

using namespace yoloflow;

namespace {

std::string pipeline(const std::string& train_extra, int epochs = 1) {
  test::TrainPipeline p;
  p.epochs = epochs;
  p.seed = 5;
  p.top = R"("ordered": true, "device": "cpu")";
  p.train = R"("optimizer": {"plugin": "sgd", "params": {"lr0": 0.01}}, "nominal_batch": 4, "warmup_epochs": 0, "val_every": 0, "log_every": 1)" +
            train_extra;
  return p.json();
}

// The first progress line's value of loss component `name` (the loss before any optimizer step).
double first_logged(const std::string& output, const std::string& name) {
  std::smatch m;
  const std::regex line("step 1/4  " + name + " ([0-9.]+)");
  REQUIRE(std::regex_search(output, m, line));
  return std::stod(m[1].str());
}

}  // namespace

TEST_CASE("loss: a loss plugin named in the pipeline is the one training minimises, logs and records") {
  const auto dir = test::temp_dir("train-custom-loss");
  test::write_coco128_subset(dir, 8);
  const auto train = [&](const std::string& run, double weight) {
    test::write_file(dir + "/" + run + ".json",
                     pipeline(R"(, "loss": {"plugin": "square_probe", "params": {"weight": )" + std::to_string(weight) + "}}"));
    auto r = test::run_cli("--plugin-path " + test::test_plugin_dir("loss_probe") + " train " + dir + "/" + run +
                           ".json --run-dir " + dir + "/" + run);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    return r.output;
  };
  const auto one = train("one", 1.0);
  const auto three = train("three", 3.0);
  // Same seed, same first batch, same initial weights: the probe's value is its weight times
  // the mean square of the outputs, so the first logged loss scales with the weight exactly.
  const double a = first_logged(one, "square");
  CHECK(a > 0);
  CHECK(first_logged(three, "square") == doctest::Approx(3.0 * a).epsilon(1e-3));
  CHECK(one.find("  box ") == std::string::npos);  // the built-in loss's components are not logged
  CHECK(one.find("done in") != std::string::npos);
  CHECK(std::regex_search(one, std::regex("epoch 1/1 done in [0-9:]+: square [0-9.]+")));

  core::ResultsCsv csv(dir + "/one/results.csv");
  csv.load();
  REQUIRE(csv.rows().size() == 1);
  CHECK(std::isfinite(csv.series("train/square_loss")[0]));
  CHECK(csv.series("train/square_loss")[0] > 0);
  CHECK(std::isfinite(csv.series("val/square_loss")[0]));  // validation losses are the same loss's
  // The loss columns are the loss's own, where Ultralytics' detection loss has its three.
  CHECK(std::find(csv.columns().begin(), csv.columns().end(), "train/box_loss") == csv.columns().end());
  CHECK(csv.columns().at(2) == "train/square_loss");
  test::remove_tree(dir);
}

TEST_CASE("loss: a schedule of a loss parameter reaches the loss at each epoch and is recorded") {
  const auto dir = test::temp_dir("train-loss-schedule");
  test::write_coco128_subset(dir, 8);
  test::write_file(dir + "/s.json",
                   pipeline(R"(, "loss": {"plugin": "square_probe", "params": {"weight": {"steps": {"0": 1.0, "1": 2.5}}}})", 2));
  const auto r = test::run_cli("--plugin-path " + test::test_plugin_dir("loss_probe") + " train " + dir +
                               "/s.json --run-dir " + dir + "/run");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  core::ResultsCsv csv(dir + "/run/results.csv");
  csv.load();
  REQUIRE(csv.rows().size() == 2);
  CHECK(csv.series("stages.train.params.loss.params.weight") == std::vector<double>{1.0, 2.5});
  CHECK(csv.series("train/weight_loss") == std::vector<double>{1.0, 2.5});  // what the loss was configured with
  test::remove_tree(dir);
}

TEST_CASE("loss: the default is the YOLO11 detection loss, with box, cls and dfl in results.csv") {
  const auto dir = test::temp_dir("train-default-loss");
  test::write_coco128_subset(dir, 8);
  test::write_file(dir + "/p.json", pipeline(R"(, "max_steps": 2)"));
  const auto r = test::run_cli("train " + dir + "/p.json --run-dir " + dir + "/run");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(std::regex_search(r.output, std::regex("step 1/4  box [0-9.]+  cls [0-9.]+  dfl [0-9.]+")));
  const auto resolved = nlohmann::json::parse(test::read_file(dir + "/run/pipeline.json"));
  const auto& loss = resolved["stages"]["train"]["params"]["loss"];
  CHECK(loss["plugin"] == "yolo11_detection");
  CHECK(loss["params"]["box"] == 7.5);
  CHECK(loss["params"]["cls"] == 0.5);
  CHECK(loss["params"]["dfl"] == 1.5);
  test::remove_tree(dir);
}

TEST_CASE("loss: box= cls= dfl= set the loss's gains; the sink's old gain parameters are refused at their path") {
  const std::string file = std::string(YOLOFLOW_SOURCE_DIR) + "/pipelines/train-coco128.json";
  const auto r = test::run_cli("validate " + file + " --print-resolved box=5 cls=0.25 dfl=2");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto doc = nlohmann::json::parse(r.output);
  const auto& loss = doc["stages"]["train"]["params"]["loss"];
  CHECK(loss["plugin"] == "yolo11_detection");
  CHECK(loss["params"]["box"] == 5);
  CHECK(loss["params"]["cls"] == 0.25);
  CHECK(loss["params"]["dfl"] == 2);

  const auto dir = test::temp_dir("train-moved-gains");
  test::write_coco128_subset(dir, 8);
  test::write_file(dir + "/old.json", pipeline(R"(, "box": 5.0, "loss": {"plugin": "yolo11_detection", "params": {"cls": -1}})"));
  const auto old = test::run_cli("validate " + dir + "/old.json");
  INFO(old.output);
  CHECK(old.exit_code == 2);
  CHECK(old.output.find("stages.train.params.box: 'box' is no longer a parameter") != std::string::npos);
  CHECK(old.output.find("it moved to stages.train.params.loss.params.box") != std::string::npos);
  CHECK(old.output.find("stages.train.params.loss.params.cls") != std::string::npos);  // out of range
  // A loss that is not a loss plugin is named with its kind.
  test::write_file(dir + "/kind.json", pipeline(R"(, "loss": {"plugin": "linear"})"));
  const auto kind = test::run_cli("validate " + dir + "/kind.json");
  INFO(kind.output);
  CHECK(kind.exit_code == 2);
  CHECK(kind.output.find("stages.train.params.loss") != std::string::npos);
  test::remove_tree(dir);
}
