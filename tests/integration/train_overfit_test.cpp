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

#include "support/paths.h"
#include "support/run_cli.h"
#include "train/checkpoint.h"
#include "train/results_csv.h"

using namespace yoloflow;
namespace fs = std::filesystem;

namespace {

// The CLI finds the built plugins by itself.
std::string plugin_arg() { return ""; }

// 8 coco128 train images (sorted, the first ones with labels) listed in a .txt beside a
// data.yaml that uses the list for both train and val.
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
  std::string yaml = "path: .\ntrain: subset.txt\nval: subset.txt\nnames:\n";
  // Class names come from coco128's own data.yaml ("names:" map lines).
  std::istringstream src(test::read_file(test::coco128_dir() + "/data.yaml"));
  std::string line;
  bool in_names = false;
  while (std::getline(src, line)) {
    if (line.rfind("names:", 0) == 0) { in_names = true; continue; }
    if (in_names && line.rfind("  ", 0) == 0) yaml += line + "\n";
  }
  test::write_file(dir + "/data.yaml", yaml);
  return dir + "/data.yaml";
}

std::string overfit_pipeline(int epochs, const std::string& train_extra = "") {
  return R"({
  "name": "overfit8",
  "epochs": )" + std::to_string(epochs) + R"(,
  "imgsz": 160,
  "seed": 0,
  "stages": {
    "source": {"plugin": "yolo_dataset", "params": {"data": "data.yaml", "split": "train"}},
    "letterbox": {"plugin": "letterbox", "input": "source"},
    "batch": {"plugin": "collate", "input": "letterbox", "params": {"batch": 8}},
    "train": {"plugin": "train", "input": "batch", "params": {
      "data": "data.yaml",
      "model": {"plugin": "yolo11", "params": {"scale": "n"}},
      "optimizer": {"plugin": "adamw", "params": {"lr0": 0.002}},
      "nominal_batch": 8, "warmup_epochs": 0, "val_every": 20, "log_every": 5)" + train_extra + R"(
    }}
  }
})";
}

}  // namespace

TEST_CASE("train sink: YOLO11n overfits 8 coco128 images on the CPU and writes its run folder") {
  const auto dir = test::temp_dir("train-overfit");
  write_subset(dir, 8);
  const int epochs = 40;  // ~2 minutes on 2 busy cores (3 s an epoch at imgsz 160)
  test::write_file(dir + "/overfit.json", overfit_pipeline(epochs));
  const std::string run_dir = dir + "/run";
  auto r = test::run_cli(plugin_arg() + "run " + dir + "/overfit.json --run-dir " + run_dir);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);

  core::ResultsCsv csv(run_dir + "/results.csv");
  csv.load();
  const auto& want = core::ResultsCsv::ultralytics_columns();
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
  CHECK(map50.back() > 0.1);

  for (const char* name : {"last.pt", "best.pt"}) {
    const auto ck = core::load_checkpoint(run_dir + "/weights/" + name);
    CHECK(ck.model.size() == 499);
    CHECK(ck.ema.size() == 499);
    CHECK(ck.meta.at("architecture") == "yolo11n");
  }
  const auto last = core::load_checkpoint(run_dir + "/weights/last.pt");
  CHECK(last.epoch == epochs);
  const cv::Mat png = cv::imread(run_dir + "/results.png");
  CHECK(png.cols > 0);
  CHECK(png.rows > 0);
}

TEST_CASE("train sink: a wrong precision name inside the train params fails validation with its path") {
  const auto dir = test::temp_dir("train-bad");
  write_subset(dir, 8);
  test::write_file(dir + "/bad.json", overfit_pipeline(1, R"(, "precision": {"plugin": "fp33"})"));
  auto r = test::run_cli(plugin_arg() + "validate " + dir + "/bad.json");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("stages.train.params.precision.plugin") != std::string::npos);
  auto run = test::run_cli(plugin_arg() + "run " + dir + "/bad.json");
  CHECK(run.exit_code == 2);
  CHECK(run.output.find("stages.train.params.precision.plugin") != std::string::npos);
}
