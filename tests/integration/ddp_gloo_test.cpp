// Data-parallel training as a user launches it: two `yoloflow run` processes with torchrun's
// variables (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), Gloo on this CPU. Two ranks with
// batch 4 must end with the weights one process reaches with batch 8; only rank 0 writes;
// a rank that dies makes the other exit with an error naming the failure, not hang.
#include <doctest/doctest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/child_process.h"
#include "support/free_port.h"
#include "support/paths.h"
#include "support/run_cli.h"
#include "training/checkpoint/checkpoint.h"
#include "runtime/run/results_csv.h"

using namespace yoloflow;
namespace fs = std::filesystem;

namespace {

std::map<std::string, std::string> rank_env(int rank, int world, int port) {
  return {{"RANK", std::to_string(rank)},       {"WORLD_SIZE", std::to_string(world)},
          {"LOCAL_RANK", std::to_string(rank)}, {"MASTER_ADDR", "127.0.0.1"},
          {"MASTER_PORT", std::to_string(port)}, {"YOLOFLOW_DIST_TIMEOUT", "120"},
          {"YOLOFLOW_DIST_HEARTBEAT_TIMEOUT", "20"}, {"OMP_NUM_THREADS", "1"}};
}

// Two ranks of `yoloflow COMMAND two.json` (run or train): rank 0 writes DIR/two, rank 1 is
// given DIR/two-rank1 (which it must leave unwritten); logs in DIR/rank0.log, DIR/rank1.log.
struct TwoRanks {
  int code0 = -1, code1 = -1;
  std::string log0, log1;
};

TwoRanks run_two_ranks(const std::string& dir, const std::string& command) {
  const int port = test::free_port();
  test::ChildProcess r0({command, dir + "/two.json", "--run-dir", dir + "/two"},
                       {rank_env(0, 2, port), dir + "/rank0.log"});
  test::ChildProcess r1({command, dir + "/two.json", "--run-dir", dir + "/two-rank1"},
                       {rank_env(1, 2, port), dir + "/rank1.log"});
  TwoRanks out;
  out.code0 = r0.wait(600'000);
  out.code1 = r1.wait(60'000);
  out.log0 = test::read_file(dir + "/rank0.log");
  out.log1 = test::read_file(dir + "/rank1.log");
  return out;
}

// The first `count` labelled coco128 train images, as train and val split of a data.yaml.
std::string write_subset(const std::string& dir, int count) {
  std::vector<fs::path> images;
  for (const auto& e : fs::directory_iterator(test::coco128_dir() + "/images/train2017")) images.push_back(e.path());
  std::sort(images.begin(), images.end());
  std::ostringstream list;
  int n = 0;
  for (const auto& p : images) {
    const auto label = fs::path(test::coco128_dir()) / "labels/train2017" / p.filename().replace_extension(".txt");
    if (!fs::exists(label) || fs::file_size(label) == 0) continue;
    list << fs::absolute(p).string() << "\n";
    if (++n == count) break;
  }
  test::write_file(dir + "/subset.txt", list.str());
  std::string yaml = "path: " + dir + "\ntrain: subset.txt\nval: subset.txt\nnames:\n";
  std::istringstream src(test::read_file(test::coco128_dir() + "/data.yaml"));
  std::string line;
  bool in_names = false;
  while (std::getline(src, line)) {
    if (line.rfind("names:", 0) == 0) {
      in_names = true;
      continue;
    }
    if (in_names && line.rfind("  ", 0) == 0) yaml += line + "\n";
  }
  test::write_file(dir + "/data.yaml", yaml);
  return dir + "/data.yaml";
}

std::string number(double v) {
  std::ostringstream os;
  os << v;  // 1e-12, not std::to_string's 0.000000
  return os.str();
}

// YOLO11n on 8 images at 64 px; SGD and no clipping (so that a wrong gradient scale shows in
// the step: Adam and norm clipping would hide it); nominal batch 8: one optimizer step per
// epoch either way.
std::string pipeline(const std::string& dir, int epochs, int batch, double lr0, int log_every = 1, int nominal = 8) {
  return R"({
  "name": "ddp8",
  "epochs": )" + std::to_string(epochs) + R"(,
  "imgsz": 64,
  "seed": 0,
  "workers": 1,
  "ordered": true,
  "stages": {
    "source": {"plugin": "yolo_dataset", "params": {"data": ")" + dir + R"(/data.yaml", "split": "train"}},
    "letterbox": {"plugin": "letterbox", "input": "source"},
    "batch": {"plugin": "collate", "input": "letterbox", "params": {"batch": )" + std::to_string(batch) + R"(}},
    "train": {"plugin": "train", "input": "batch", "params": {
      "data": ")" + dir + R"(/data.yaml",
      "device": "cpu",
      "model": {"plugin": "yolo11", "params": {"scale": "n"}},
      "optimizer": {"plugin": "sgd", "params": {"lr0": )" + number(lr0) + R"(, "weight_decay": 0}},
      "scheduler": {"plugin": "linear"},
      "nominal_batch": )" + std::to_string(nominal) + R"(, "warmup_epochs": 0, "val_every": 0, "ema": false, "clip_grad": 1e6, "log_every": )" +
         std::to_string(log_every) + R"(
    }}
  }
})";
}

std::map<std::string, torch::Tensor> trainable_weights(const std::string& checkpoint) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& [name, t] : core::load_checkpoint(checkpoint).model) {
    // Parameters only: BatchNorm running statistics are rank 0's own (its half of the batch).
    if (name.find("running_") != std::string::npos || name.find("num_batches") != std::string::npos) continue;
    out[name] = t.to(torch::kDouble);
  }
  return out;
}

double distance(const std::map<std::string, torch::Tensor>& a, const std::map<std::string, torch::Tensor>& b) {
  double s = 0;
  for (const auto& [k, v] : a) s += (v - b.at(k)).pow(2).sum().item<double>();
  return std::sqrt(s);
}

}  // namespace

// Exactly comparable: 2 ranks x batch 1 (nominal 2: accumulate 2 / (1 x 2) = 1) and one
// process with batch 1 accumulating 2 micro-batches (accumulate 2) see the same images in
// the same forward passes (positions 2k and 2k+1 of the order: rank 0 and rank 1, or micro-
// batches 1 and 2), so the summed gradients, and the weights, must agree to float rounding.
// (2 ranks x batch 4 against one batch of 8 differ by design, as in PyTorch's DDP: each
// BatchNorm normalises over its own rank's 4 images; at 64 px that moves the gradient a lot.)
TEST_CASE("ddp: 2 Gloo ranks reach the weights of 1 process with the doubled batch; rank 0 alone writes") {
  const auto dir = test::temp_dir("ddp-equal");
  write_subset(dir, 8);
  const int epochs = 2;
  const double lr0 = 1e-3;
  test::write_file(dir + "/one.json", pipeline(dir, epochs, 1, lr0, 4, 2));
  test::write_file(dir + "/two.json", pipeline(dir, epochs, 1, lr0, 4, 2));
  test::write_file(dir + "/init.json", pipeline(dir, 1, 8, 1e-12, 1, 8));

  // The initial weights (a run whose one step changes nothing measurable), and one process.
  auto init = test::run_cli("run " + dir + "/init.json --run-dir " + dir + "/init", "OMP_NUM_THREADS=1 ");
  REQUIRE_MESSAGE(init.exit_code == 0, init.output);
  auto one = test::run_cli("run " + dir + "/one.json --run-dir " + dir + "/one", "OMP_NUM_THREADS=1 ");
  REQUIRE_MESSAGE(one.exit_code == 0, one.output);
  CHECK(one.output.find("batch 1 x accumulate 2 (nominal 2)") != std::string::npos);

  const TwoRanks ranks = run_two_ranks(dir, "run");
  const int c0 = ranks.code0, c1 = ranks.code1;
  const std::string& log0 = ranks.log0;
  const std::string& log1 = ranks.log1;
  INFO("rank 0:\n" << log0);
  INFO("rank 1:\n" << log1);
  REQUIRE(c0 == 0);
  REQUIRE(c1 == 0);

  // Rank 0 printed progress and wrote everything; rank 1 printed no progress and wrote nothing.
  CHECK(log0.find("data parallel: rank 0/2") != std::string::npos);
  CHECK(log0.find("batch 1 x 2 ranks x accumulate 1 (nominal 2)") != std::string::npos);
  CHECK(log0.find("epoch 2/2: 4 images in 4 batches") != std::string::npos);  // its half of the 8
  CHECK(log1.find("epoch") == std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/two-rank1"));
  core::ResultsCsv csv(dir + "/two/results.csv");
  csv.load();
  CHECK(csv.rows().size() == static_cast<std::size_t>(epochs));
  CHECK(csv.series("metrics/mAP50(B)").size() == static_cast<std::size_t>(epochs));
  CHECK(core::load_checkpoint(dir + "/two/weights/last.pt").global_step == 4 * epochs);

  const auto w0 = trainable_weights(dir + "/init/weights/last.pt");
  const auto w1 = trainable_weights(dir + "/one/weights/last.pt");
  const auto w2 = trainable_weights(dir + "/two/weights/last.pt");
  REQUIRE(w0.size() == w1.size());
  REQUIRE(w1.size() == w2.size());
  const double moved = distance(w1, w0);  // how far one process's training went
  const double apart = distance(w2, w1);  // how far the two-rank run ended from it
  MESSAGE("update norm " << moved << "; 2 ranks ended " << apart << " from 1 process (" << apart / moved
                         << " of the update)");
  CHECK(moved > 1e-3);
  // A mean where the sum belongs (half the gradient), or ranks that do not exchange
  // gradients, would land a large fraction of the update away.
  CHECK(apart < 0.01 * moved);
}

TEST_CASE("ddp: a rank that dies makes the other exit with an error instead of waiting") {
  const auto dir = test::temp_dir("ddp-death");
  write_subset(dir, 8);
  test::write_file(dir + "/two.json", pipeline(dir, 200, 4, 0.01));
  for (int victim : {1, 0}) {
    CAPTURE(victim);
    const int port = test::free_port();
    const std::string tag = std::to_string(victim);
    test::ChildProcess r0({"run", dir + "/two.json", "--run-dir", dir + "/run" + tag},
                         {rank_env(0, 2, port), dir + "/rank0-" + tag + ".log"});
    test::ChildProcess r1({"run", dir + "/two.json", "--run-dir", dir + "/run" + tag},
                         {rank_env(1, 2, port), dir + "/rank1-" + tag + ".log"});
    // Wait until training runs (rank 0 prints a step line), then kill one rank outright.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
    while (test::read_file(dir + "/rank0-" + tag + ".log").find("epoch 2/200") == std::string::npos &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    test::ChildProcess& dead = victim == 0 ? r0 : r1;
    test::ChildProcess& alive = victim == 0 ? r1 : r0;
    dead.signal(SIGKILL);
    const auto start = std::chrono::steady_clock::now();
    const int code = alive.wait(90'000);  // -1: still running at the deadline (killed on scope exit)
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    dead.wait(10'000);
    const std::string log = test::read_file(dir + "/rank" + std::to_string(1 - victim) + "-" + tag + ".log");
    INFO(log);
    MESSAGE("rank " << victim << " killed: rank " << 1 - victim << " exited " << code << " after " << seconds << " s");
    CHECK(code == 1);  // not -1 (still waiting at the deadline), not 0
    CHECK(log.find("error: ") != std::string::npos);
    CHECK((log.find("rank " + std::to_string(victim)) != std::string::npos ||
           log.find("another rank died") != std::string::npos));
  }
}

// Only rank 0 validates, so only it can decide an early stop; the other rank must stop with it
// instead of waiting in the next epoch's all-reduce for a rank that has left.
TEST_CASE("ddp: an early stop decided by rank 0 (patience) stops both ranks cleanly") {
  const auto dir = test::temp_dir("ddp-patience");
  write_subset(dir, 8);
  std::string json = pipeline(dir, 6, 2, 1e-9);
  json.replace(json.find(R"("imgsz": 64)"), 11, R"("imgsz": 320)");  // where the trained weights see objects
  // Trained weights (left as they are) validated every epoch: fitness above 0 after the first epoch, then a
  // confidence threshold nothing reaches makes it 0 (a zero fitness never counts as a best
  // once there was a better one), so patience 1 ends the run after its second epoch, well
  // before the sixth.
  const std::string from = R"("val_every": 0)";
  json.replace(json.find(from), from.size(),
               R"("val_every": 1, "val_conf": {"steps": {"0": 0.001, "1": 0.999}}, "callbacks": [{"plugin": "early_stopping", "params": {"patience": 1}}], "weights": ")" +
                   test::fixtures_dir() + R"(/coco128-val-parity/coco128-yolo11n.pt")");
  test::write_file(dir + "/two.json", json);
  const TwoRanks ranks = run_two_ranks(dir, "run");
  const int c0 = ranks.code0, c1 = ranks.code1;
  const std::string& log0 = ranks.log0;
  const std::string& log1 = ranks.log1;
  INFO("rank 0:\n" << log0);
  INFO("rank 1:\n" << log1);
  CHECK(c0 == 0);
  CHECK(c1 == 0);  // not 1 (error: rank 0 left) and not -1 (still waiting)
  CHECK(log0.find("early stop: no fitness improvement") != std::string::npos);
  core::ResultsCsv csv(dir + "/two/results.csv");
  csv.load();
  CHECK(csv.rows().size() >= 1);
  CHECK(csv.rows().size() < 6);
}

// A checkpoint saved by 2 ranks in mid-epoch resumes in one process at the right sample:
// the position is global (2 batches x 1 image x 2 ranks = 4), so the resumed process trains
// positions 4.. of the same order and ends with the weights of a run that was one process
// throughout (same images in the same forward passes, as in the first test case).
TEST_CASE("ddp: a mid-epoch checkpoint of 2 ranks resumes in 1 process with the weights of an uninterrupted run") {
  const auto dir = test::temp_dir("ddp-resume-world");
  write_subset(dir, 8);
  const int epochs = 2;
  test::write_file(dir + "/one.json", pipeline(dir, epochs, 1, 1e-3, 4, 2));
  std::string json = pipeline(dir, epochs, 1, 1e-3, 4, 2);
  const std::string from = R"("warmup_epochs": 0)";
  json.replace(json.find(from), from.size(), R"("warmup_epochs": 0, "max_steps": 2)");
  test::write_file(dir + "/two.json", json);

  auto one = test::run_cli("train " + dir + "/one.json --run-dir " + dir + "/one", "OMP_NUM_THREADS=1 ");
  REQUIRE_MESSAGE(one.exit_code == 0, one.output);

  const TwoRanks ranks = run_two_ranks(dir, "train");
  const int c0 = ranks.code0, c1 = ranks.code1;
  const std::string& log0 = ranks.log0;
  const std::string& log1 = ranks.log1;
  INFO("rank 0:\n" << log0);
  INFO("rank 1:\n" << log1);
  REQUIRE(c0 == 0);
  REQUIRE(c1 == 0);
  CHECK(log0.find("continue with: yoloflow train --resume") != std::string::npos);
  const auto saved = core::load_checkpoint(dir + "/two/weights/last.pt");
  CHECK(saved.epoch == 0);
  CHECK(saved.next_sequence == 4);

  auto rest = test::run_cli("train --resume " + dir + "/two stages.train.params.max_steps=0", "OMP_NUM_THREADS=1 ");
  INFO(rest.output);
  REQUIRE(rest.exit_code == 0);
  CHECK(rest.output.find("batch 1 x accumulate 2 (nominal 2)") != std::string::npos);
  const auto a = core::load_checkpoint(dir + "/one/weights/last.pt");
  const auto b = core::load_checkpoint(dir + "/two/weights/last.pt");
  CHECK(b.epoch == epochs);
  CHECK(b.global_step == a.global_step);
  const double apart = distance(trainable_weights(dir + "/one/weights/last.pt"), trainable_weights(dir + "/two/weights/last.pt"));
  MESSAGE("2 ranks + resume in 1 process ended " << apart << " from 1 process throughout");
  CHECK(apart < 1e-3);
}
