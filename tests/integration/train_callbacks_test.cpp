// The train sink's scheduler and callbacks as a user configures them in a pipeline: the
// scheduler's curve in results.csv, callback state carried through a stop and `--resume`, a
// failing callback named in the error, and the parameters they replaced refused with their path.
// Tiny settings (8 coco128 images, imgsz 64, batch 2: 4 batches an epoch) keep it fast.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "support/coco_subset.h"
#include "support/paths.h"
#include "support/run_cli.h"
#include "support/train_pipeline.h"
#include "training/checkpoint/checkpoint.h"
#include "runtime/run/results_csv.h"

using namespace yoloflow;

namespace {

std::string pipeline(int epochs, const std::string& train_extra, const std::string& scheduler = R"({"plugin": "linear"})") {
  test::TrainPipeline p;
  p.epochs = epochs;
  p.seed = 3;
  p.top = R"("ordered": true, "device": "cpu")";
  p.scheduler = scheduler;
  p.train = R"("optimizer": {"plugin": "sgd", "params": {"lr0": 0.01}}, "nominal_batch": 4, "warmup_epochs": 0, "val_every": 0, "log_every": 1)" +
            train_extra;
  return p.json();
}

std::string probe_cli(const std::string& args) {
  return "--plugin-path " + test::test_plugin_dir("callback_probe") + " train " + args;
}

}  // namespace

TEST_CASE("scheduler cosine: each epoch's lr in results.csv is lr0 times the cosine factor") {
  const auto dir = test::temp_dir("train-scheduler");
  test::write_coco128_subset(dir, 8);
  test::write_file(dir + "/cos.json", pipeline(3, "", R"({"plugin": "cosine", "params": {"lrf": 0.1}})"));
  const auto r = test::run_cli("train " + dir + "/cos.json --run-dir " + dir + "/run");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  core::ResultsCsv csv(dir + "/run/results.csv");
  csv.load();
  REQUIRE(csv.rows().size() == 3);
  for (int e = 0; e < 3; ++e) {
    const double factor = ((1.0 - std::cos(e * M_PI / 3.0)) / 2.0) * (0.1 - 1.0) + 1.0;
    CHECK(csv.series("lr/pg0")[e] == doctest::Approx(0.01 * factor).epsilon(1e-9));
  }
  test::remove_tree(dir);
}

TEST_CASE("callbacks: their state is in the checkpoint and a resumed run continues with it") {
  const auto dir = test::temp_dir("train-callback-state");
  test::write_coco128_subset(dir, 8);
  const std::string callbacks =
      R"(, "callbacks": [{"plugin": "callback_probe"}, {"plugin": "early_stopping", "params": {"patience": 5}}])";
  // Each process stops after 3 batches (counted across epochs): mid-epoch 1, then (resumed) the
  // last batch of epoch 1 and 2 of epoch 2.
  test::write_file(dir + "/budget.json", pipeline(2, callbacks + R"(, "max_steps": 3)"));
  const auto first = test::run_cli(probe_cli(dir + "/budget.json --run-dir " + dir + "/run"));
  INFO(first.output);
  REQUIRE(first.exit_code == 0);
  const auto mid = core::load_checkpoint(dir + "/run/weights/last.pt");
  CHECK(mid.epoch == 0);
  CHECK(mid.step_in_epoch == 3);
  CHECK(mid.meta["callbacks"]["callback_probe"] == nlohmann::json({{"epochs", 0}, {"batches", 3}}));
  CHECK(mid.meta["callbacks"]["early_stopping"]["epochs_without_improvement"] == 0);

  const auto second = test::run_cli(probe_cli("--resume " + dir + "/run"));
  INFO(second.output);
  REQUIRE(second.exit_code == 0);
  const auto mid2 = core::load_checkpoint(dir + "/run/weights/last.pt");
  CHECK(mid2.epoch == 1);
  CHECK(mid2.step_in_epoch == 2);
  CHECK(mid2.meta["callbacks"]["callback_probe"] == nlohmann::json({{"epochs", 1}, {"batches", 6}}));

  const auto rest = test::run_cli(probe_cli("--resume " + dir + "/run stages.train.params.max_steps=0"));
  INFO(rest.output);
  REQUIRE(rest.exit_code == 0);
  // Counted on from each checkpoint: 3 batches, then 1 + 2, then 2.
  CHECK(test::read_file(dir + "/run/probe.txt") ==
        "epoch 1 epochs 1 batches 4 resumed 1\n"
        "epoch 2 epochs 2 batches 8 resumed 1\n");
  const auto done = core::load_checkpoint(dir + "/run/weights/last.pt");
  CHECK(done.epoch == 2);
  CHECK(done.meta["callbacks"]["callback_probe"] == nlohmann::json({{"epochs", 2}, {"batches", 8}}));
  test::remove_tree(dir);
}

TEST_CASE("callbacks: one that throws ends the run with its name, place and hook") {
  const auto dir = test::temp_dir("train-callback-throws");
  test::write_coco128_subset(dir, 8);
  test::write_file(dir + "/throws.json",
                   pipeline(1, R"(, "callbacks": [{"plugin": "early_stopping"}, )"
                               R"({"plugin": "callback_probe", "params": {"throw_in": "on_epoch_end"}}])"));
  const auto r = test::run_cli(probe_cli(dir + "/throws.json --run-dir " + dir + "/run"));
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("callback 'callback_probe' (stages.train.params.callbacks.1, " + test::test_plugin_dir("callback_probe") +
                      "/yoloflow_test_callback_probe.so) failed in on_epoch_end: probe failure in on_epoch_end") !=
        std::string::npos);
  test::remove_tree(dir);
}

TEST_CASE("periodic_checkpoints and early_stopping: epochN.pt files, and a stop after `patience` epochs") {
  const auto dir = test::temp_dir("train-builtin-callbacks");
  test::write_coco128_subset(dir, 8);
  test::write_file(dir + "/periodic.json",
                   pipeline(4, R"(, "callbacks": [{"plugin": "periodic_checkpoints", "params": {"save_period": 2}}])"));
  const auto r = test::run_cli("train " + dir + "/periodic.json --run-dir " + dir + "/run");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(core::load_checkpoint(dir + "/run/weights/epoch2.pt").epoch == 2);
  CHECK(core::load_checkpoint(dir + "/run/weights/epoch4.pt").epoch == 4);
  CHECK_FALSE(std::filesystem::exists(dir + "/run/weights/epoch1.pt"));
  CHECK_FALSE(std::filesystem::exists(dir + "/run/weights/epoch3.pt"));
  test::remove_tree(dir);
}

TEST_CASE("the train sink's former schedule and callback parameters are refused with their path") {
  const auto dir = test::temp_dir("train-moved-params");
  test::write_coco128_subset(dir, 8);
  test::write_file(dir + "/old.json", pipeline(1, R"(, "patience": 5)"));
  const auto old = test::run_cli("validate " + dir + "/old.json");
  INFO(old.output);
  CHECK(old.exit_code == 2);
  CHECK(old.output.find("stages.train.params.patience: unknown parameter 'patience'") != std::string::npos);
  test::TrainPipeline p;
  p.scheduler = R"({"plugin": "cosine", "params": {"lrf": 0}})";
  test::write_file(dir + "/bad.json", p.json());
  const auto bad = test::run_cli("validate " + dir + "/bad.json");
  INFO(bad.output);
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("stages.train.params.scheduler.params.lrf") != std::string::npos);
  test::remove_tree(dir);
}
