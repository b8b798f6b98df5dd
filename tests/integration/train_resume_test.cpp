// Checkpoints that survive anything, checked the way a user relies on them: a run stopped
// mid-epoch (step budget, SIGINT) or killed with SIGKILL continues with
// `yoloflow train --resume RUN_DIR`, and a stopped-and-resumed run ends with the same weights
// as one that never stopped. Tiny settings (8 coco128 images, imgsz 64) keep it fast.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <signal.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <thread>

#include "support/child_process.h"
#include "support/coco_subset.h"
#include "support/paths.h"
#include "support/run_cli.h"
#include "support/train_pipeline.h"
#include "training/checkpoint/checkpoint.h"
#include "training/step/train_state.h"
#include "runtime/run/results_csv.h"

using namespace yoloflow;
namespace fs = std::filesystem;

namespace {

// 8 images, batch 2 (4 batches an epoch), nominal batch 4 (an optimizer step every 2
// batches, so a stop after an odd batch leaves accumulated gradients to carry over).
std::string tiny_pipeline(int epochs, const std::string& train_extra = "", const std::string& batch = "2") {
  test::TrainPipeline p;
  p.epochs = epochs;
  p.seed = 3;
  p.batch = batch;
  p.flip = true;
  p.top = R"("ordered": true, "device": "cpu")";
  p.train = R"("optimizer": {"plugin": "sgd", "params": {"lr0": 0.01}}, "nominal_batch": 4, "warmup_epochs": 0, "val_every": 0, "log_every": 1)" +
            train_extra;
  return p.json();
}

// Largest absolute difference over all model and EMA tensors of two checkpoints.
double max_difference(const core::Checkpoint& a, const core::Checkpoint& b) {
  double worst = 0;
  auto cmp = [&](const core::TensorList& x, const core::TensorList& y) {
    REQUIRE(x.size() == y.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      REQUIRE(x[i].first == y[i].first);
      const auto d = (x[i].second.to(torch::kDouble) - y[i].second.to(torch::kDouble)).abs().max().item<double>();
      worst = std::max(worst, d);
    }
  };
  cmp(a.model, b.model);
  cmp(a.ema, b.ema);
  return worst;
}

struct TinyRun {
  std::string dir;
  std::string run(const std::string& name) const { return dir + "/" + name; }
};

TinyRun make_tiny(const std::string& tag, int images = 8) {
  TinyRun t{test::temp_dir(tag)};
  test::write_coco128_subset(t.dir, images);
  return t;
}

}  // namespace

TEST_CASE("train --resume after a mid-epoch stop ends with the same weights as an uninterrupted run") {
  const auto t = make_tiny("train-resume");
  test::write_file(t.dir + "/tiny.json", tiny_pipeline(2));
  // max_steps counts every batch of the process, across epochs: 7 = all 4 of epoch 1 and 3 of epoch 2.
  test::write_file(t.dir + "/budget.json", tiny_pipeline(2, R"(, "max_steps": 7)"));

  auto whole = test::run_cli("train " + t.dir + "/tiny.json --run-dir " + t.run("whole"));
  INFO(whole.output);
  REQUIRE(whole.exit_code == 0);

  // Stops after batch 3 of epoch 2: in the middle of a gradient accumulation.
  auto first = test::run_cli("train " + t.dir + "/budget.json --run-dir " + t.run("split"));
  INFO(first.output);
  REQUIRE(first.exit_code == 0);
  CHECK(first.output.find("stopped: max_steps: 7 batches") != std::string::npos);
  CHECK(first.output.find("continue with: yoloflow train --resume " + t.run("split")) != std::string::npos);
  const auto mid = core::load_checkpoint(t.run("split") + "/weights/last.pt");
  CHECK(mid.epoch == 1);
  CHECK(mid.step_in_epoch == 3);
  CHECK(mid.next_sequence == 6);
  CHECK_FALSE(mid.grads.empty());  // the accumulated half-step travels in the checkpoint
  // The loop's own state is one typed record, mid-epoch with the epoch's running totals.
  REQUIRE(mid.meta.contains("train_state"));
  const core::SavedTrainState saved = core::read_saved_train_state(mid.meta);
  CHECK(saved.micro == 1);
  CHECK(saved.images == 6);
  CHECK(saved.batch == 2);
  CHECK(saved.loss_sum.size() == 3);
  CHECK(saved.loss_sum[0] > 0.0);
  for (const char* gone : {"epoch_loss_sum", "micro", "epoch_images", "batch", "freeze"}) CHECK_FALSE(mid.meta.contains(gone));

  // A checkpoint written before the record (the same values as separate meta keys) resumes the same.
  fs::copy(t.run("split"), t.run("earlier"), fs::copy_options::recursive);
  {
    core::Checkpoint earlier = mid;
    earlier.meta.erase("train_state");
    earlier.meta["epoch_loss_sum"] = saved.loss_sum;
    earlier.meta["epoch_images"] = saved.images;
    earlier.meta["epoch_oom_retries"] = saved.oom_retries;
    earlier.meta["epoch_seconds"] = saved.epoch_seconds;
    earlier.meta["micro"] = saved.micro;
    earlier.meta["batch"] = saved.batch;
    earlier.meta["micro_batch"] = saved.micro_batch;
    earlier.meta["total_seconds"] = saved.total_seconds;
    earlier.meta["freeze"] = saved.frozen_layers;
    core::save_checkpoint(t.run("earlier") + "/weights/last.pt", earlier);
  }

  auto rest = test::run_cli("train --resume " + t.run("split") + " stages.train.params.max_steps=0");
  INFO(rest.output);
  REQUIRE(rest.exit_code == 0);
  CHECK(rest.output.find("resuming from") != std::string::npos);
  auto rest_earlier = test::run_cli("train --resume " + t.run("earlier") + " stages.train.params.max_steps=0");
  INFO(rest_earlier.output);
  REQUIRE(rest_earlier.exit_code == 0);
  CHECK(max_difference(core::load_checkpoint(t.run("split") + "/weights/last.pt"),
                       core::load_checkpoint(t.run("earlier") + "/weights/last.pt")) == 0.0);

  // A record with a value of the wrong type is refused in one line, and the run's files stay as they were.
  fs::copy(t.run("earlier"), t.run("damaged"), fs::copy_options::recursive);
  {
    core::Checkpoint damaged = mid;
    damaged.meta["train_state"]["micro"] = "one";
    core::save_checkpoint(t.run("damaged") + "/weights/last.pt", damaged);
  }
  const std::string results_before = test::read_file(t.run("damaged") + "/results.csv");
  auto refused = test::run_cli("train --resume " + t.run("damaged"));
  INFO(refused.output);
  CHECK(refused.exit_code == 2);
  CHECK(refused.output.find("train_state record holds a value of the wrong type") != std::string::npos);
  CHECK(refused.output.find("json.exception") == std::string::npos);
  CHECK(test::read_file(t.run("damaged") + "/results.csv") == results_before);

  const auto a = core::load_checkpoint(t.run("whole") + "/weights/last.pt");
  const auto b = core::load_checkpoint(t.run("split") + "/weights/last.pt");
  CHECK(a.epoch == 2);
  CHECK(b.epoch == 2);
  CHECK(a.global_step == b.global_step);
  CHECK(max_difference(a, b) < 1e-5);

  core::ResultsCsv ra(t.run("whole") + "/results.csv"), rb(t.run("split") + "/results.csv");
  ra.load();
  rb.load();
  REQUIRE(ra.rows().size() == 2);
  REQUIRE(rb.rows().size() == 2);
  for (const char* col : {"train/box_loss", "train/cls_loss", "train/dfl_loss", "lr/pg0"}) {
    for (std::size_t e = 0; e < 2; ++e) {
      CHECK_MESSAGE(std::abs(ra.series(col)[e] - rb.series(col)[e]) < 1e-4, col << " epoch " << e + 1);
    }
  }
  test::remove_tree(t.dir);
}

TEST_CASE("1 epoch then --resume epochs=2 equals 2 epochs; a finished run says how to extend it") {
  const auto t = make_tiny("train-extend");
  test::write_file(t.dir + "/two.json", tiny_pipeline(2));
  test::write_file(t.dir + "/one.json", tiny_pipeline(1));
  // cpu_threads=1 in both (the resumed run reads it back from its pipeline.json): the same
  // CPU kernels' reduction order on both sides.
  auto two = test::run_cli("train " + t.dir + "/two.json --run-dir " + t.run("two") + " stages.train.params.cpu_threads=1");
  INFO(two.output);
  REQUIRE(two.exit_code == 0);
  CHECK(two.output.find(", 1 CPU thread, ") != std::string::npos);
  REQUIRE(test::run_cli("train " + t.dir + "/one.json --run-dir " + t.run("one") + " stages.train.params.cpu_threads=1").exit_code == 0);

  auto again = test::run_cli("train --resume " + t.run("one"));
  INFO(again.output);
  CHECK(again.exit_code == 0);
  CHECK(again.output.find("finished all 1 epochs") != std::string::npos);

  auto more = test::run_cli("train --resume " + t.run("one") + " epochs=2");
  INFO(more.output);
  REQUIRE(more.exit_code == 0);
  const auto a = core::load_checkpoint(t.run("two") + "/weights/last.pt");
  const auto b = core::load_checkpoint(t.run("one") + "/weights/last.pt");
  CHECK(b.epoch == 2);
  CHECK(max_difference(a, b) < 1e-5);
  test::remove_tree(t.dir);
}

TEST_CASE("--resume amp=False on a run trained with AMP's parameters continues in fp32 without them; precision=NAME too") {
  const auto t = make_tiny("train-resume-precision");
  // AMP with its loss-scaler parameters in the run's pipeline.json, as the shipped pipelines have them.
  test::write_file(t.dir + "/one.json",
                   tiny_pipeline(1, R"(, "precision": {"plugin": "amp", "params": {"init_scale": 1024.0, "growth_interval": 100}})"));
  auto one = test::run_cli("train " + t.dir + "/one.json --run-dir " + t.run("one"));
  INFO(one.output);
  REQUIRE(one.exit_code == 0);
  auto more = test::run_cli("train --resume " + t.run("one") + " epochs=2 amp=False");
  INFO(more.output);
  REQUIRE(more.exit_code == 0);
  CHECK(more.output.find("unknown parameter") == std::string::npos);
  // Said once, where the run changed course.
  CHECK(more.output.find("resume: the overrides change epochs 1 -> 2, stages.train.params.precision.plugin \"amp\" -> "
                         "\"fp32\"") != std::string::npos);
  CHECK(core::load_checkpoint(t.run("one") + "/weights/last.pt").epoch == 2);
  // The run's pipeline now says what it continued with: fp32, none of AMP's parameters.
  const auto pipeline = nlohmann::json::parse(test::read_file(t.run("one") + "/pipeline.json"));
  const auto& precision = pipeline["stages"]["train"]["params"]["precision"];
  CHECK(precision["plugin"] == "fp32");
  CHECK((!precision.contains("params") || precision["params"].empty()));
  // precision=NAME: any strategy by its plugin's name.
  auto bf16 = test::run_cli("train --resume " + t.run("one") + " epochs=3 precision=amp_bf16");
  INFO(bf16.output);
  REQUIRE(bf16.exit_code == 0);
  CHECK(bf16.output.find("precision amp_bf16") != std::string::npos);
  // results.csv says what each epoch trained with: AMP on the CPU runs fp32 (no fp16 autocast
  // there), fp32, then bf16 autocast.
  core::ResultsCsv results(t.run("one") + "/results.csv");
  results.load();
  REQUIRE(results.rows().size() == 3);
  CHECK(results.series("precision_bits") == std::vector<double>{32, 32, 16});
  CHECK(results.series("cuda_device") == std::vector<double>{-1, -1, -1});
  test::remove_tree(t.dir);
}

TEST_CASE("precision_schedule: bf16 autocast, then fp32 from epoch 2; resumed before or after the switch, and resumed "
          "with precision=fp32 by hand at that epoch, a run ends with the uninterrupted run's weights") {
  const auto t = make_tiny("train-precision-schedule");
  const std::string bf16 = R"(, "precision": {"plugin": "amp_bf16"})";
  const std::string scheduled = bf16 + R"(, "precision_schedule": {"1": "fp32"})";
  const auto train = [&](const std::string& name, const std::string& extra) {
    test::write_file(t.dir + "/" + name + ".json", tiny_pipeline(3, extra));
    auto r = test::run_cli("train " + t.dir + "/" + name + ".json --run-dir " + t.run(name));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    return r.output;
  };
  const auto resume = [&](const std::string& name, const std::string& words) {
    auto r = test::run_cli("train --resume " + t.run(name) + " stages.train.params.max_steps=0" + words);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    return r.output;
  };
  const auto last = [&](const std::string& name) { return core::load_checkpoint(t.run(name) + "/weights/last.pt"); };

  const std::string whole = train("whole", scheduled);
  CHECK(whole.find("epoch 2: precision amp_bf16 -> fp32 (precision_schedule)") != std::string::npos);
  {  // results.csv says which epochs trained with autocast
    core::ResultsCsv csv(t.run("whole") + "/results.csv", {});
    csv.load();
    CHECK(csv.series("precision_bits") == std::vector<double>{16, 32, 32});
    CHECK(csv.series("cuda_device") == std::vector<double>{-1, -1, -1});
  }
  train("bf16", bf16);
  MESSAGE("scheduled vs bf16 throughout: " << max_difference(last("whole"), last("bf16")));
  CHECK(max_difference(last("whole"), last("bf16")) > 1e-4);  // the switch changed the training

  // Stopped in epoch 1 (bf16): the resumed run switches at epoch 2 as the whole one did.
  train("before", scheduled + R"(, "max_steps": 3)");
  CHECK(resume("before", "").find("epoch 2: precision amp_bf16 -> fp32") != std::string::npos);
  CHECK(max_difference(last("whole"), last("before")) < 1e-5);
  // Stopped in epoch 2 (fp32): the resumed run starts in fp32, the strategy its checkpoint holds.
  train("after", scheduled + R"(, "max_steps": 6)");
  CHECK(last("after").epoch == 1);
  const std::string after = resume("after", "");
  CHECK(after.find("precision fp32") != std::string::npos);
  CHECK(max_difference(last("whole"), last("after")) < 1e-5);
  // The switch keeps the weights, the optimizer's state and the EMA: the same as stopping after
  // epoch 1 and resuming with precision=fp32.
  train("by-hand", bf16 + R"(, "max_steps": 4)");
  resume("by-hand", " precision=fp32 workers=1");
  CHECK(max_difference(last("whole"), last("by-hand")) < 1e-5);
  {  // the resume's changes in the rows of the epochs after it (epoch 1's row is written by the
     // resumed process, which ended that epoch: the settings at an epoch's end)
    core::ResultsCsv csv(t.run("by-hand") + "/results.csv", {});
    csv.load();
    const auto bits = csv.series("precision_bits"), workers = csv.series("workers");
    REQUIRE(bits.size() == 3);
    REQUIRE(workers.size() == 3);
    CHECK(bits[1] == 32);
    CHECK(bits[2] == 32);
    CHECK(workers[1] == 1);
    CHECK(workers[2] == 1);
  }
  test::remove_tree(t.dir);
}

TEST_CASE("precision_schedule: epochs that are no epochs and strategies that do not exist are refused at their paths") {
  const auto t = make_tiny("train-precision-schedule-refused");
  test::write_file(t.dir + "/p.json",
                   tiny_pipeline(2, R"(, "precision_schedule": {"one": "fp32", "1": "fp16", "-1": {"plugin": "amp", "params": {"init_scal": 8}}})"));
  auto r = test::run_cli("train " + t.dir + "/p.json --run-dir " + t.run("r"));
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("stages.train.params.precision_schedule.one: 'one' is no epoch") != std::string::npos);
  CHECK(r.output.find("stages.train.params.precision_schedule.1.plugin: unknown precision plugin 'fp16'; did you mean 'fp32'?") !=
        std::string::npos);
  CHECK(r.output.find("precision_schedule.-1.params.init_scal: unknown parameter 'init_scal'") != std::string::npos);
  CHECK(!fs::exists(t.run("r")));
  test::remove_tree(t.dir);
}

TEST_CASE("SIGINT during training saves, exits 0 with the resume command, and the run completes on resume") {
  // 16 images, 8 batches an epoch: a signal sent at batch 2 lands well inside the epoch even
  // when a fast machine runs a few more batches before it is delivered.
  const auto t = make_tiny("train-sigint", 16);
  test::write_file(t.dir + "/long.json", tiny_pipeline(200));
  test::ChildProcess child({"train", t.dir + "/long.json", "--run-dir", t.run("r")});
  REQUIRE(child.wait_for_output("epoch 1/200  step 2/8", 120000));
  child.signal(SIGINT);
  const int code = child.wait(60000);
  INFO(child.output());
  CHECK(code == 0);
  CHECK(child.output().find("interrupt: stopping after the current step") != std::string::npos);
  CHECK(child.output().find("interrupted by SIGINT") != std::string::npos);
  CHECK(child.output().find("continue with: yoloflow train --resume " + t.run("r")) != std::string::npos);
  const auto ck = core::load_checkpoint(t.run("r") + "/weights/last.pt");
  MESSAGE("saved at epoch " << ck.epoch + 1 << ", batch " << ck.step_in_epoch << ", " << ck.global_step
                            << " optimizer steps");
  // Saved where it stopped, inside the first epoch (8 batches of 2), not at an epoch's end: a
  // resume continues from that batch. At least the first accumulation window (2 batches) had
  // stepped.
  CHECK(ck.epoch == 0);
  CHECK(ck.step_in_epoch >= 2);
  CHECK(ck.step_in_epoch < 8);
  CHECK(ck.next_sequence == static_cast<std::uint64_t>(2 * ck.step_in_epoch));
  CHECK(ck.global_step >= 1);

  auto rest = test::run_cli("train --resume " + t.run("r") + " epochs=" + std::to_string(ck.epoch + 1));
  INFO(rest.output);
  CHECK(rest.exit_code == 0);
  core::ResultsCsv csv(t.run("r") + "/results.csv");
  csv.load();
  CHECK(csv.rows().size() == static_cast<std::size_t>(ck.epoch + 1));
  test::remove_tree(t.dir);
}

TEST_CASE("a second SIGINT stops at once, says so, and leaves the last complete checkpoint") {
  const auto t = make_tiny("train-sigint-twice");
  test::write_file(t.dir + "/long.json", tiny_pipeline(200, R"(, "callbacks": [{"plugin": "periodic_checkpoints", "params": {"save_every": 1}}])"));
  // Steps at 320 px take a good fraction of a second on a CPU: the second signal arrives
  // while the first stop still waits for its step.
  test::ChildProcess child({"train", t.dir + "/long.json", "--run-dir", t.run("r"), "imgsz=320"});
  REQUIRE(child.wait_for_output("epoch 2/200  step 2/4", 300000));
  child.signal(SIGINT);
  REQUIRE(child.wait_for_output("interrupt: stopping after the current step", 10000));
  child.signal(SIGINT);
  const int code = child.wait(60000);
  INFO(child.output());
  CHECK(code == 130);  // kExitInterrupted
  CHECK(child.output().find("interrupt: stopping after the current step") != std::string::npos);
  CHECK(child.output().find("second interrupt: stopping now without saving") != std::string::npos);
  // save_every 1 wrote last.pt at every optimizer step before: it is whole and resumes.
  const auto ck = core::load_checkpoint(t.run("r") + "/weights/last.pt");
  CHECK(ck.global_step >= 2);
  test::remove_tree(t.dir);
}

TEST_CASE("SIGKILL at any moment leaves a loadable last.pt that resumes to the end") {
  const auto t = make_tiny("train-kill");
  // last.pt rewritten at every optimizer step: a kill most likely lands mid-write.
  test::write_file(t.dir + "/long.json", tiny_pipeline(200, R"(, "callbacks": [{"plugin": "periodic_checkpoints", "params": {"save_every": 1}}])"));
  test::ChildProcess child({"train", t.dir + "/long.json", "--run-dir", t.run("r")});
  REQUIRE(child.wait_for_output("epoch 2/200", 120000));
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  child.signal(SIGKILL);
  CHECK(child.wait(10000) == 128 + SIGKILL);

  const auto ck = core::load_checkpoint(t.run("r") + "/weights/last.pt");  // throws if torn
  CHECK(ck.model.size() == 499);
  auto rest = test::run_cli("train --resume " + t.run("r") + " epochs=" + std::to_string(ck.epoch + 1));
  INFO(rest.output);
  CHECK(rest.exit_code == 0);
  const auto done = core::load_checkpoint(t.run("r") + "/weights/last.pt");
  CHECK(done.epoch == ck.epoch + 1);
  test::remove_tree(t.dir);
}

TEST_CASE("per-epoch schedules are applied at epoch boundaries and recorded in results.csv") {
  const auto t = make_tiny("train-schedule");
  test::write_file(t.dir + "/sched.json",
                   tiny_pipeline(2, R"(, "loss": {"plugin": "yolo11_detection", "params": {"box": {"steps": {"0": 7.5, "1": 5.0}}}})",
                                 R"({"steps": {"0": 2, "1": 4}})"));
  auto r = test::run_cli("train " + t.dir + "/sched.json --run-dir " + t.run("r"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  core::ResultsCsv csv(t.run("r") + "/results.csv");
  csv.load();
  REQUIRE(csv.rows().size() == 2);
  CHECK(csv.series("stages.batch.params.batch") == std::vector<double>{2, 4});
  // A schedule inside the sink's loss component: recorded, and the loss reconfigured with it.
  CHECK(csv.series("stages.train.params.loss.params.box") == std::vector<double>{7.5, 5.0});
  CHECK(csv.series("batch") == std::vector<double>{2, 4});
  test::remove_tree(t.dir);
}
