// A plugin component that fails deep inside training (the scheduler's lr_factor, the loss's
// compute, the optimizer's step, the precision's scale_loss, the model's forward_train) is named
// in the error: its JSON path, kind, plugin and library, and the call that failed; the host is
// not blamed. Real training runs on 8 coco128 images at 64 px with the test plugins of
// tests/plugins/throwing_components; each fails on its first batch.
#include <doctest/doctest.h>

#include <string>

#include "support/coco_subset.h"
#include "support/paths.h"
#include "support/run_cli.h"
#include "support/train_pipeline.h"

using namespace yoloflow;

namespace {

std::string library() {
  return test::test_plugin_dir("throwing_components") + "/yoloflow_test_throwing_components.so";
}

// `yoloflow train` with the train sink's `params` ("scheduler" among them when given), the
// throwing plugins loaded; returns its result.
test::CliResult train_with(const std::string& dir, const std::string& name, const std::string& scheduler,
                           const std::string& params) {
  test::TrainPipeline p;
  p.name = name;
  p.top = R"("ordered": true, "device": "cpu", "workers": 1)";
  if (!scheduler.empty()) p.scheduler = scheduler;
  p.train = R"("nominal_batch": 2, "warmup_epochs": 0, "val_every": 0, "log_every": 1)" +
            (params.empty() ? std::string() : ", " + params);
  test::write_file(dir + "/" + name + ".json", p.json());
  return test::run_cli("--plugin-path " + test::test_plugin_dir("throwing_components") + " train " + dir + "/" + name +
                           ".json --run-dir " + dir + "/" + name,
                       "OMP_NUM_THREADS=1 ");
}

// The error names the stage that ran, then the component: path, kind 'plugin', library, call.
void check_named(const test::CliResult& r, const std::string& path, const std::string& component,
                 const std::string& call, const std::string& message) {
  INFO(r.output);
  CHECK(r.exit_code == 1);
  const std::string expected = "error: stage 'train' (sink 'train', <built-in>) failed on batch 0 of epoch 0: " + path +
                               " (" + component + ", " + library() + ") failed in " + call + ": " + message;
  CHECK(r.output.find(expected) != std::string::npos);
}

}  // namespace

TEST_CASE("a failing scheduler, loss, optimizer, precision or model is named with its path, library and call") {
  const auto dir = test::temp_dir("train-plugin-failures");
  test::write_coco128_subset(dir, 8);
  SUBCASE("scheduler") {
    check_named(train_with(dir, "scheduler", R"({"plugin": "test_throwing_scheduler"})", ""),
                "stages.train.params.scheduler", "scheduler 'test_throwing_scheduler'", "lr_factor",
                "vector::_M_range_check");
  }
  SUBCASE("loss") {
    check_named(train_with(dir, "loss", "", R"("loss": {"plugin": "test_throwing_loss"})"), "stages.train.params.loss",
                "loss 'test_throwing_loss'", "compute", "test_throwing_loss: compute failed on purpose");
  }
  SUBCASE("optimizer") {
    check_named(train_with(dir, "optimizer", "", R"("optimizer": {"plugin": "test_throwing_optimizer"})"),
                "stages.train.params.optimizer", "optimizer 'test_throwing_optimizer'", "step",
                "test_throwing_optimizer: step failed on purpose");
  }
  SUBCASE("precision") {
    check_named(train_with(dir, "precision", "", R"("precision": {"plugin": "test_throwing_precision"})"),
                "stages.train.params.precision", "precision 'test_throwing_precision'", "scale_loss",
                "test_throwing_precision: scale_loss failed on purpose");
  }
  SUBCASE("model") {
    check_named(train_with(dir, "model", "", R"("model": {"plugin": "test_throwing_model"})"),
                "stages.train.params.model", "model 'test_throwing_model'", "forward_train",
                "test_throwing_model: forward_train failed on purpose");
  }
  test::remove_tree(dir);
}

TEST_CASE("a component the train sink makes is configured under its full JSON path") {
  const auto dir = test::temp_dir("train-nested-path");
  test::write_coco128_subset(dir, 8);
  const auto r = train_with(dir, "undeclared", "", R"("loss": {"plugin": "test_undeclared_param_loss"})");
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("stages.train.params.loss (loss 'test_undeclared_param_loss', " + library() +
                      ") failed to configure: stages.train.params.loss.params.gain: the component asked for a parameter "
                      "that has no value") != std::string::npos);
  test::remove_tree(dir);
}
