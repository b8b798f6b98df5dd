// The built-in `train` sink driven by `yoloflow run` as a user runs it: YOLO11n overfits
// a handful of coco128 images on the CPU (loss falls, mAP50 on the same images rises),
// and the run folder holds results.csv, results.png, last.pt and best.pt.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <opencv2/imgcodecs.hpp>

#include "support/coco_subset.h"
#include "support/paths.h"
#include "support/run_cli.h"
#include "support/train_pipeline.h"
#include "training/checkpoint/checkpoint.h"
#include "runtime/run/results_csv.h"

using namespace yoloflow;
namespace fs = std::filesystem;

namespace {

// The CLI finds the built plugins by itself.
std::string plugin_arg() { return ""; }

std::string overfit_pipeline(int epochs, const std::string& train_extra = "") {
  test::TrainPipeline p;
  p.name = "overfit8";
  p.epochs = epochs;
  p.imgsz = 96;
  p.train = R"("model": {"plugin": "yolo11", "params": {"scale": "n"}}, "optimizer": {"plugin": "adamw", "params": {"lr0": 0.002}}, )"
            R"("nominal_batch": 2, "warmup_epochs": 0, "val_every": 25, "log_every": 4)" + train_extra;
  return p.json();
}

}  // namespace

TEST_CASE("train sink: YOLO11n overfits 8 coco128 images on the CPU and writes its run folder") {
  const auto dir = test::temp_dir("train-overfit");
  test::write_coco128_subset(dir, 8);
  // 4 optimizer steps an epoch. BatchNorm's running statistics (momentum 0.03) need ~100
  // steps to follow the weights: before that eval-mode scores stay near the initial bias and
  // mAP is 0 (measured: epoch 20 mAP50 0, epoch 40 0.73). ~1 minute on 2 cores.
  const int epochs = 50;
  test::write_file(dir + "/overfit.json", overfit_pipeline(epochs));
  const std::string run_dir = dir + "/run";
  auto r = test::run_cli(plugin_arg() + "run " + dir + "/overfit.json --run-dir " + run_dir);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);

  core::ResultsCsv csv(run_dir + "/results.csv");
  csv.load();
  // Ultralytics' detection columns, in its order, first; the fitness column beside them.
  const std::vector<std::string> want = {"epoch", "time", "train/box_loss", "train/cls_loss", "train/dfl_loss",
                                         "metrics/precision(B)", "metrics/recall(B)", "metrics/mAP50(B)",
                                         "metrics/mAP50-95(B)", "val/box_loss", "val/cls_loss", "val/dfl_loss",
                                         "lr/pg0", "lr/pg1", "lr/pg2"};
  CHECK(std::vector<std::string>(csv.columns().begin(), csv.columns().begin() + want.size()) == want);
  CHECK(std::find(csv.columns().begin(), csv.columns().end(), "fitness") != csv.columns().end());
  for (const auto& c : want) {
    CHECK_MESSAGE(std::find(csv.columns().begin(), csv.columns().end(), c) != csv.columns().end(), c);
  }
  REQUIRE(csv.rows().size() == static_cast<std::size_t>(epochs));
  const auto box = csv.series("train/box_loss");
  const auto cls = csv.series("train/cls_loss");
  const auto map50 = csv.series("metrics/mAP50(B)");
  // The first epoch against the mean of the last five: a clear fall, not noise.
  auto tail_mean = [](const std::vector<double>& v) {
    double s = 0;
    for (std::size_t i = v.size() - 5; i < v.size(); ++i) s += v[i];
    return s / 5;
  };
  MESSAGE("box " << box.front() << " -> " << tail_mean(box) << ", cls " << cls.front() << " -> "
                 << tail_mean(cls) << ", final mAP50 " << map50.back());
  CHECK(tail_mean(box) < 0.8 * box.front());
  CHECK(tail_mean(cls) < 0.5 * cls.front());
  CHECK(map50.back() > 0.3);

  const auto last = core::load_checkpoint(run_dir + "/weights/last.pt");
  CHECK(last.epoch == epochs);
  CHECK(last.model.size() == 499);
  CHECK(last.ema.size() == 499);
  CHECK_FALSE(last.optimizer.empty());
  CHECK(last.meta.at("architecture") == "yolo11n");
  // best.pt as Ultralytics' best.pt: the EMA in float16 and the run's description, nothing a
  // resume needs, so about a quarter of last.pt's size.
  const auto best = core::load_checkpoint(run_dir + "/weights/best.pt");
  CHECK(best.model.empty());
  CHECK(best.optimizer.empty());
  REQUIRE(best.ema.size() == 499);
  CHECK(best.meta.at("architecture") == "yolo11n");
  CHECK(core::deployable_only(best));
  for (const auto& [name, t] : best.ema) {
    CAPTURE(name);
    if (!t.is_floating_point()) continue;
    CHECK((t.scalar_type() == torch::kHalf));
  }
  const auto best_bytes = std::filesystem::file_size(run_dir + "/weights/best.pt");
  const auto last_bytes = std::filesystem::file_size(run_dir + "/weights/last.pt");
  MESSAGE("best.pt " << best_bytes << " bytes, last.pt " << last_bytes);
  CHECK(best_bytes * 3 < last_bytes);
  // A resume of best.pt is refused in one line naming last.pt.
  const auto resumed = test::run_cli("train --resume " + run_dir + "/weights/best.pt");
  CAPTURE(resumed.output);
  CHECK(resumed.exit_code == 2);
  CHECK(resumed.output.find("holds the weights to deploy only") != std::string::npos);
  CHECK(resumed.output.find("resume from the run's last.pt") != std::string::npos);
  const cv::Mat png = cv::imread(run_dir + "/results.png");
  CHECK(png.cols > 0);
  CHECK(png.rows > 0);
  // Validation's metrics go to results.csv; metrics.json is `yoloflow val`'s and a validate pipeline's.
  CHECK_FALSE(std::filesystem::exists(run_dir + "/metrics.json"));
}

TEST_CASE("train sink: a wrong precision name inside the train params fails validation with its path") {
  const auto dir = test::temp_dir("train-bad");
  test::write_coco128_subset(dir, 8);
  test::write_file(dir + "/bad.json", overfit_pipeline(1, R"(, "precision": {"plugin": "fp33"})"));
  auto r = test::run_cli(plugin_arg() + "validate " + dir + "/bad.json");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("stages.train.params.precision.plugin") != std::string::npos);
  auto run = test::run_cli(plugin_arg() + "run " + dir + "/bad.json");
  CHECK(run.exit_code == 2);
  CHECK(run.output.find("stages.train.params.precision.plugin") != std::string::npos);
}
