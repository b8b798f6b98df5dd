// The train sink's `time` (Ultralytics' time=H) as a user runs it: the budget, not `epochs`,
// ends the run. It plans the epochs again after each one and cuts the epoch in which it is
// spent; the last epoch is validated and checkpointed, and the run continues with --resume.
// Tiny settings (coco128 images at imgsz 64, yolo11n on the CPU) keep it fast.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "support/coco_subset.h"
#include "support/paths.h"
#include "support/run_cli.h"
#include "support/train_pipeline.h"
#include "training/checkpoint/checkpoint.h"
#include "runtime/run/results_csv.h"

using namespace yoloflow;
namespace fs = std::filesystem;

namespace {

constexpr int kEpochs = 1000;  // far more than the budget holds

std::string budget_pipeline(double seconds, const std::string& batch = "2") {
  test::TrainPipeline p;
  p.epochs = kEpochs;
  p.batch = batch;
  p.top = R"("workers": 1, "device": "cpu")";
  p.train = R"("optimizer": {"plugin": "sgd", "params": {"lr0": 0.01}}, "nominal_batch": 4, "warmup_epochs": 0, )"
            R"("val_every": 0, "log_every": 1, "cpu_threads": 1, "plots": false, "time": )" +
            std::to_string(seconds / 3600.0);
  return p.json();
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("train time budget: the run plans its epochs by the budget and stops when it is spent") {
  const auto dir = test::temp_dir("train-time-budget");
  test::write_coco128_subset(dir, 8);  // batch 2: 4 batches an epoch
  const double budget = 8.0;
  test::write_file(dir + "/budget.json", budget_pipeline(budget));
  const std::string run = dir + "/run";

  const auto t0 = std::chrono::steady_clock::now();
  const auto r = test::run_cli("train " + dir + "/budget.json --run-dir " + run, "OMP_NUM_THREADS=1 ");
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  // About the budget: the training takes it (a plan rounds up), then the last validation and
  // the process's start and end; generous, for a loaded machine.
  CHECK(wall > 0.8 * budget);
  CHECK(wall < budget + 40.0);

  // The first epoch trains on the pipeline's count; the plan after it replaces that.
  CHECK(has(r.output, "epoch 1/" + std::to_string(kEpochs) + "  step 1/4"));
  CHECK(has(r.output, " epochs instead of " + std::to_string(kEpochs)));
  CHECK(has(r.output, "stopped: time: the "));
  CHECK(has(r.output, ": the run ends with epoch "));

  core::ResultsCsv csv(run + "/results.csv");
  csv.load();
  const std::size_t epochs = csv.rows().size();
  CHECK(epochs >= 1);
  CHECK(epochs < static_cast<std::size_t>(kEpochs));
  REQUIRE(fs::exists(run + "/weights/last.pt"));
  const auto last = core::load_checkpoint(run + "/weights/last.pt");
  CHECK(last.epoch == static_cast<int>(epochs));  // an end-of-epoch checkpoint of the last row
  CHECK(last.meta.value("epochs", 0) == static_cast<int>(epochs));  // the count the budget ended on
  // The last epoch is the run's: its line shows the planned count, and it was validated.
  CHECK(has(r.output, "epoch " + std::to_string(epochs) + "/" + std::to_string(epochs) + " done"));
  // The command's last line counts the epochs the budget planned, not the pipeline's.
  CHECK(has(r.output, "complete epochs of " + std::to_string(epochs) + "\n"));
  CHECK(csv.rows().back().count("metrics/mAP50-95(B)") == 1);
  test::remove_tree(dir);
}

TEST_CASE("train time budget: spent within the first epoch, it cuts the epoch there; --resume continues") {
  const auto dir = test::temp_dir("train-time-cut");
  test::write_coco128_subset(dir, 32);  // batch 2: 16 batches an epoch, far longer than the budget
  test::write_file(dir + "/cut.json", budget_pipeline(0.3));
  const std::string run = dir + "/run";

  const auto r = test::run_cli("train " + dir + "/cut.json --run-dir " + run, "OMP_NUM_THREADS=1 ");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(has(r.output, "the run ends with epoch 1 (cut short after batch "));
  CHECK(has(r.output, "stopped: time: the "));
  CHECK_FALSE(has(r.output, "step 16/16"));
  core::ResultsCsv csv(run + "/results.csv");
  csv.load();
  REQUIRE(csv.rows().size() == 1);
  CHECK(csv.rows().front().count("metrics/mAP50-95(B)") == 1);  // the cut epoch is validated
  const auto last = core::load_checkpoint(run + "/weights/last.pt");
  CHECK(last.epoch == 1);
  CHECK(last.meta.value("epochs", 0) == 1);

  // Resumable like any checkpointed run: the budget is this process's again (one batch here).
  const auto rest = test::run_cli("train --resume " + run + " stages.train.params.max_steps=1", "OMP_NUM_THREADS=1 ");
  INFO(rest.output);
  REQUIRE(rest.exit_code == 0);
  CHECK(has(rest.output, "resuming from"));
  CHECK(has(rest.output, "stopped: max_steps: 1 batches"));
  const auto resumed = core::load_checkpoint(run + "/weights/last.pt");
  CHECK(resumed.epoch == 1);
  CHECK(resumed.step_in_epoch == 1);
  test::remove_tree(dir);
}

TEST_CASE("train time budget: schedules counted from the end follow the budget's plan, as close_mosaic does") {
  const auto dir = test::temp_dir("train-time-budget-schedule");
  test::write_coco128_subset(dir, 8);
  // Batch 2 (4 steps an epoch), 4 in the last epoch (2 steps): "-1" counts from the end. Of the
  // pipeline's 1000 epochs that is epoch 999, which a budget of seconds never reaches; of the
  // budget's plan it is the run's last.
  test::write_file(dir + "/budget.json", budget_pipeline(6.0, R"({"steps": {"0": 2, "-1": 4}})"));
  const auto r = test::run_cli("train " + dir + "/budget.json --run-dir " + dir + "/run", "OMP_NUM_THREADS=1 ");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(has(r.output, "  step 1/4"));
  CHECK(has(r.output, "  step 1/2"));
}
