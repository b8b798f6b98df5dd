// Run outputs that must survive anything: atomic files, results.csv, results.png, checkpoints.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include <opencv2/imgcodecs.hpp>
#include <torch/torch.h>

#include "support/paths.h"
#include "support/run_cli.h"
#include "training/checkpoint/checkpoint.h"
#include "training/trainer/epoch_report.h"
#include "training/checkpoint/checkpoint_writer.h"
#include "runtime/run/results_csv.h"
#include "training/trainer/results_plot.h"
#include "runtime/util/atomic_file.h"
#include "yoloflow/error.h"

using namespace yoloflow;
namespace fs = std::filesystem;

TEST_CASE("write_file_atomic replaces the file and leaves no temporary behind") {
  const auto dir = test::temp_dir("atomic");
  const auto path = dir + "/sub/out.txt";
  core::write_file_atomic(path, "first");
  core::write_file_atomic(path, "second");
  CHECK(test::read_file(path) == "second");
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir + "/sub")) {
    (void)e;
    ++files;
  }
  CHECK(files == 1);
  CHECK_THROWS_WITH_AS(core::write_file_atomic("/proc/definitely/not/here.txt", "x"),
                       doctest::Contains("/proc/definitely/not"), Error);
}

TEST_CASE("a process killed while writing never leaves a partial file") {
  // A child rewrites a 4 MiB file in a loop; we SIGKILL it at arbitrary moments. Whatever
  // instant the kill lands, the file on disk is one complete version.
  const auto dir = test::temp_dir("atomic-kill");
  const auto path = dir + "/big.bin";
  for (int round = 0; round < 5; ++round) {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      for (int i = 0;; ++i) {
        std::string data(4 << 20, static_cast<char>('a' + (i % 26)));
        core::write_file_atomic(path, data);
      }
    }
    usleep(20000 + round * 7000);
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    if (!fs::exists(path)) continue;  // killed before the first rename
    const auto text = test::read_file(path);
    REQUIRE(text.size() == (4u << 20));
    CHECK(text.find_first_not_of(text[0]) == std::string::npos);
  }
}

TEST_CASE("results.csv has Ultralytics' columns first, extras after, and reloads") {
  const auto dir = test::temp_dir("results");
  // The trainer's leading columns for the detection loss and evaluator: Ultralytics' order.
  const auto leading = core::results_columns(
      {"box", "cls", "dfl"}, {"metrics/precision(B)", "metrics/recall(B)", "metrics/mAP50(B)", "metrics/mAP50-95(B)"});
  core::ResultsCsv csv(dir + "/results.csv", leading);
  csv.add_row({{"epoch", 1}, {"train/box_loss", 2.5}, {"metrics/mAP50(B)", 0.1}, {"gpu_mem_GiB", 1.5}});
  csv.add_row({{"epoch", 2}, {"train/box_loss", 2.0}, {"metrics/mAP50(B)", 0.2}, {"gpu_mem_GiB", 1.6}});
  csv.save();
  const auto text = test::read_file(dir + "/results.csv");
  CHECK(text.rfind("epoch,time,train/box_loss,train/cls_loss,train/dfl_loss,metrics/precision(B),"
                   "metrics/recall(B),metrics/mAP50(B),metrics/mAP50-95(B),val/box_loss,val/cls_loss,"
                   "val/dfl_loss,lr/pg0,lr/pg1,lr/pg2,gpu_mem_GiB\n", 0) == 0);
  CHECK(text.find("\n1,,2.5,,,,,0.1,,,,,,,,1.5\n") != std::string::npos);

  core::ResultsCsv again(dir + "/results.csv", leading);
  again.load();
  REQUIRE(again.rows().size() == 2);
  CHECK(again.columns() == csv.columns());
  CHECK(again.series("train/box_loss")[1] == doctest::Approx(2.0));
  CHECK(std::isnan(again.series("train/cls_loss")[0]));
  core::ResultsCsv resumed(dir + "/results.csv", leading);
  resumed.load(1);  // resuming after epoch 1 drops later rows
  CHECK(resumed.rows().size() == 1);
}

TEST_CASE("results.csv reloads rows whose last columns are empty (a loss's columns before its first validation)") {
  const auto dir = test::temp_dir("results-trailing");
  core::ResultsCsv csv(dir + "/results.csv");
  csv.add_row({{"epoch", 1}, {"train/square_loss", 0.5}});
  csv.add_row({{"epoch", 2}, {"train/square_loss", 0.4}, {"val/square_loss", 0.3}});
  csv.save();
  core::ResultsCsv again(dir + "/results.csv");
  again.load();
  REQUIRE(again.rows().size() == 2);
  CHECK(std::isnan(again.series("val/square_loss")[0]));
  CHECK(again.series("val/square_loss")[1] == doctest::Approx(0.3));
}

TEST_CASE("results.png is a real image with a panel per column") {
  const auto dir = test::temp_dir("plot");
  core::ResultsCsv csv(dir + "/results.csv");
  for (int e = 1; e <= 5; ++e) {
    csv.add_row({{"epoch", e}, {"train/box_loss", 3.0 / e}, {"metrics/mAP50(B)", 0.1 * e}});
  }
  core::plot_results(csv, dir + "/results.png");
  const cv::Mat img = cv::imread(dir + "/results.png");
  REQUIRE_FALSE(img.empty());
  CHECK(img.cols == 5 * 360);
  CHECK(img.rows == 260);
  // The curves are drawn in blue somewhere in each of the two panels.
  auto has_blue = [&](int x0, int x1) {
    for (int y = 0; y < img.rows; ++y) {
      for (int x = x0; x < x1; ++x) {
        const auto p = img.at<cv::Vec3b>(y, x);
        if (p[0] > 150 && p[2] < 80) return true;
      }
    }
    return false;
  };
  CHECK(has_blue(0, 360));
  CHECK(has_blue(360, 720));
  CHECK_FALSE(has_blue(720, 1080));
}

TEST_CASE("checkpoints round-trip every field and refuse truncated files") {
  const auto dir = test::temp_dir("ckpt");
  core::Checkpoint c;
  c.model = {{"model.0.conv.weight", torch::randn({4, 3, 3, 3})},
             {"model.0.bn.num_batches_tracked", torch::tensor(7, torch::kLong)}};
  c.ema = {{"model.0.conv.weight", torch::randn({4, 3, 3, 3})}};
  c.optimizer = {{"weights.momentum.0", torch::ones({4})}};
  c.precision = {{"scale", torch::tensor(1024.0)}};
  c.ema_updates = 12;
  c.epoch = 3;
  c.step_in_epoch = 5;
  c.global_step = 77;
  c.best_fitness = 0.25;
  c.meta = {{"pipeline", {{"name", "x"}}}, {"rng", "123"}};
  core::save_checkpoint(dir + "/last.pt", c);
  const auto r = core::load_checkpoint(dir + "/last.pt");
  REQUIRE(r.model.size() == 2);
  CHECK(r.model[0].first == "model.0.conv.weight");
  CHECK(torch::equal(r.model[0].second, c.model[0].second));
  CHECK(r.model[1].second.item<int64_t>() == 7);
  CHECK(torch::equal(r.ema[0].second, c.ema[0].second));
  CHECK(r.optimizer[0].first == "weights.momentum.0");
  CHECK(r.precision[0].second.item<double>() == 1024.0);
  CHECK(r.ema_updates == 12);
  CHECK(r.epoch == 3);
  CHECK(r.step_in_epoch == 5);
  CHECK(r.global_step == 77);
  CHECK(r.best_fitness == 0.25);
  CHECK(r.meta["pipeline"]["name"] == "x");

  const auto bytes = test::read_file(dir + "/last.pt");
  test::write_file(dir + "/cut.pt", bytes.substr(0, bytes.size() / 2));
  CHECK_THROWS_WITH_AS(core::load_checkpoint(dir + "/cut.pt"), doctest::Contains("cut.pt"), Error);
  CHECK_THROWS_WITH_AS(core::load_checkpoint(dir + "/missing.pt"), doctest::Contains("missing.pt"), Error);
}

TEST_CASE("the background checkpoint writer saves the state as of save(), to every path, and reports a failed write") {
  const auto dir = test::temp_dir("ckpt-async");
  core::Checkpoint c;
  c.model = {{"model.0.conv.weight", torch::randn({16, 3, 3, 3})}};
  c.ema = {{"model.0.conv.weight", torch::randn({16, 3, 3, 3})}};
  c.optimizer = {{"weights.momentum.0", torch::ones({16})}};
  c.epoch = 4;
  const auto model_then = c.model[0].second.clone();
  const auto momentum_then = c.optimizer[0].second.clone();
  {
    core::CheckpointWriter writer(/*background=*/true);
    writer.save(c, {dir + "/last.pt", dir + "/best.pt"});
    // Training goes on changing its tensors in place while the file is written.
    c.model[0].second.add_(1.0);
    c.optimizer[0].second.mul_(0.0);
    writer.wait();
    const auto last = core::load_checkpoint(dir + "/last.pt");
    CHECK(torch::equal(last.model[0].second, model_then));
    CHECK(torch::equal(last.optimizer[0].second, momentum_then));
    CHECK(last.epoch == 4);
    CHECK(test::read_file(dir + "/best.pt") == test::read_file(dir + "/last.pt"));

    // The next save waits for the one before: files end as of the last save.
    c.epoch = 5;
    writer.save(c, {dir + "/last.pt"});
    c.epoch = 6;
    writer.save(c, {dir + "/last.pt"});
    writer.wait();
    const auto newest = core::load_checkpoint(dir + "/last.pt");
    CHECK(newest.epoch == 6);
    CHECK(torch::equal(newest.model[0].second, model_then + 1.0));
  }

  // A write that cannot happen (a folder is in the way) surfaces at the next wait, naming the file.
  fs::create_directories(dir + "/blocked.pt");
  core::CheckpointWriter writer(/*background=*/true);
  writer.save(c, {dir + "/blocked.pt"});
  CHECK_THROWS_WITH_AS(writer.wait(), doctest::Contains("blocked.pt"), Error);
  writer.wait();  // reported once
  // Synchronous mode writes before save() returns.
  core::CheckpointWriter now(/*background=*/false);
  now.save(c, {dir + "/sync.pt"});
  CHECK(core::load_checkpoint(dir + "/sync.pt").epoch == 6);
}

TEST_CASE("a checkpoint: Python reads it with weights_only=False, and weights export makes its EMA a file plain torch.load reads") {
  const auto dir = test::temp_dir("ckpt_py");
  core::Checkpoint c;
  c.model = {{"model.0.conv.weight", torch::full({4, 3, 3, 3}, 0.5)}};
  c.ema = {{"model.0.conv.weight", torch::full({4, 3, 3, 3}, 0.25)},
           {"model.0.bn.num_batches_tracked", torch::tensor(9, torch::kLong)}};
  c.epoch = 4;
  c.best_fitness = 0.5;
  core::save_checkpoint(dir + "/last.pt", c);
  const auto r = test::run_cli("weights export " + dir + "/last.pt --out " + dir + "/sd.pt");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  test::write_file(dir + "/check.py", R"(import sys, torch
ck = torch.load(sys.argv[1] + '/last.pt', weights_only=False)
print('ckpt', ck['format'], ck['epoch'], ck['best_fitness'], float(ck['ema']['model.0.conv.weight'].sum()))
try:
    torch.load(sys.argv[1] + '/last.pt', weights_only=True)
    print('checkpoint weights_only: read')
except Exception:
    print('checkpoint weights_only: refused')
sd = torch.load(sys.argv[1] + '/sd.pt')
print('sd', type(sd).__name__, list(sd), float(sd['model.0.conv.weight'].sum()), int(sd['model.0.bn.num_batches_tracked']))
)");
  std::string out;
  FILE* p = popen((test::python() + " " + dir + "/check.py " + dir + " 2>&1").c_str(), "r");
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int rc = pclose(p);
  INFO(out);
  CHECK(WEXITSTATUS(rc) == 0);
  CHECK(out.find("ckpt yoloflow-checkpoint-1 4 0.5 27.0") != std::string::npos);
  // Documented in docs/model.md: LibTorch's type tags are not on the weights_only allowlist.
  CHECK(out.find("checkpoint weights_only: refused") != std::string::npos);
  CHECK(out.find("sd OrderedDict ['model.0.conv.weight', 'model.0.bn.num_batches_tracked'] 27.0 9") !=
        std::string::npos);
}
