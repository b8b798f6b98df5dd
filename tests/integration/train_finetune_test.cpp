// Fine-tuning from pretrained weights (`train.params.weights`), as a user starts from
// Ultralytics' or an earlier run's weights: every tensor is transferred when the classes
// match; with another class count the class head keeps its initial values and the rest is
// transferred; a file that does not fit is refused naming the JSON path and the file.
#include <doctest/doctest.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "training/model/weights_io.h"
#include "support/coco_subset.h"
#include "support/paths.h"
#include "support/run_cli.h"
#include "training/checkpoint/checkpoint.h"

using namespace yoloflow;
namespace fs = std::filesystem;

namespace {

// 4 images at 64 px, one epoch, and a learning rate too small to move anything: the trained
// weights are the initial ones.
std::string finetune_pipeline(const std::string& data, const std::string& weights) {
  return R"({
  "name": "finetune",
  "epochs": 1,
  "imgsz": 64,
  "device": "cpu",
  "workers": 1,
  "stages": {
    "source": {"plugin": "yolo_dataset", "params": {"data": ")" + data + R"(", "split": "train"}},
    "letterbox": {"plugin": "letterbox", "input": "source"},
    "batch": {"plugin": "collate", "input": "letterbox", "params": {"batch": 4}},
    "train": {"plugin": "train", "input": "batch", "params": {
      "data": ")" + data + R"(",
      "weights": ")" + weights + R"(",
      "model": {"plugin": "yolo11", "params": {"scale": "n"}},
      "optimizer": {"plugin": "sgd", "params": {"lr0": 1e-20, "weight_decay": 0, "momentum": 0}},
      "scheduler": {"plugin": "linear"},
      "warmup_epochs": 0, "val_every": 0, "ema": false, "log_every": 1
    }}
  }
})";
}

std::string fixture() { return test::shared_dir() + "/fixtures/yolo11n-parity/yolo11n.pt"; }

}  // namespace

TEST_CASE("train weights=: a PyTorch state dict with the same classes is transferred whole") {
  const auto dir = test::temp_dir("finetune-same");
  const auto data = test::write_coco128_subset(dir, 4);
  test::write_file(dir + "/p.json", finetune_pipeline(data, fixture()));
  auto r = test::run_cli("train " + dir + "/p.json --run-dir " + dir + "/run", "OMP_NUM_THREADS=1 ");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("weights: 499/499 tensors from " + fixture()) != std::string::npos);

  // The trained model holds the file's values (conv weights; BatchNorm running statistics
  // moved with the one training batch).
  const auto file = core::read_weights(fixture());
  const auto ck = core::load_checkpoint(dir + "/run/weights/last.pt");
  std::size_t compared = 0;
  for (const auto& [name, t] : ck.model) {
    if (name.find(".conv.weight") == std::string::npos) continue;
    for (const auto& [fname, ft] : file) {
      if (fname != name) continue;
      CHECK_MESSAGE(torch::allclose(t.to(torch::kFloat), ft.to(torch::kFloat), 0, 1e-6), name);
      ++compared;
    }
  }
  CHECK(compared > 50);
  test::remove_tree(dir);
}

TEST_CASE("train weights=: another class count keeps the class head initial; a wrong model is refused") {
  const auto dir = test::temp_dir("finetune-other");
  const auto data80 = test::write_coco128_subset(dir, 4);
  // A 3-class dataset: 4 coco128 images with their labels' classes taken modulo 3.
  fs::create_directories(dir + "/d3/images/train");
  fs::create_directories(dir + "/d3/labels/train");
  std::istringstream list(test::read_file(dir + "/subset.txt"));
  for (std::string image; std::getline(list, image);) {
    const fs::path src(image);
    fs::copy_file(src, dir + "/d3/images/train/" + src.filename().string());
    const auto label = fs::path(test::coco128_dir()) / "labels/train2017" / src.filename().replace_extension(".txt");
    std::istringstream rows(test::read_file(label.string()));
    std::ostringstream out;
    for (std::string row; std::getline(rows, row);) {
      if (row.empty()) continue;
      const auto space = row.find(' ');
      out << std::stoi(row.substr(0, space)) % 3 << row.substr(space) << "\n";
    }
    test::write_file(dir + "/d3/labels/train/" + src.filename().replace_extension(".txt").string(), out.str());
  }
  test::write_file(dir + "/d3/data.yaml", "path: " + dir + "/d3\ntrain: images/train\nval: images/train\nnames:\n  0: a\n  1: b\n  2: c\n");
  test::write_file(dir + "/p.json", finetune_pipeline(dir + "/d3/data.yaml", fixture()));
  auto r = test::run_cli("train " + dir + "/p.json --run-dir " + dir + "/run", "OMP_NUM_THREADS=1 ");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("80 classes in the file, 3 in the dataset") != std::string::npos);
  // Everything but the class branch came from the file: the box branch's first conv, say.
  const auto file = core::read_weights(fixture());
  const auto ck = core::load_checkpoint(dir + "/run/weights/last.pt");
  bool seen = false;
  for (const auto& [name, t] : ck.model) {
    if (name != "model.23.cv2.0.0.conv.weight") continue;
    for (const auto& [fname, ft] : file) {
      if (fname == name) {
        CHECK(torch::allclose(t.to(torch::kFloat), ft.to(torch::kFloat), 0, 1e-6));
        seen = true;
      }
    }
  }
  CHECK(seen);

  // A yolo11s file into yolo11n: refused, naming the JSON path and the file.
  test::write_file(dir + "/s.json", finetune_pipeline(data80, fixture()));
  auto bad = test::run_cli("train " + dir + "/s.json --run-dir " + dir + "/bad stages.train.params.model.params.scale=s",
                           "OMP_NUM_THREADS=1 ");
  INFO(bad.output);
  CHECK(bad.exit_code != 0);
  CHECK(bad.output.find("do not fit the model") != std::string::npos);
  CHECK(bad.output.find(fixture()) != std::string::npos);

  auto missing = test::run_cli("train " + dir + "/s.json --run-dir " + dir + "/missing stages.train.params.weights=" + dir +
                                   "/nope.pt",
                               "OMP_NUM_THREADS=1 ");
  INFO(missing.output);
  CHECK(missing.exit_code != 0);
  CHECK(missing.output.find("train.params.weights") != std::string::npos);
  CHECK(missing.output.find("nope.pt") != std::string::npos);
  test::remove_tree(dir);
}

TEST_CASE("an optimizer that leaves a learning rate at 0 after setup() is refused before training") {
  const auto dir = test::temp_dir("zero-lr");
  const std::string data = test::write_coco128_subset(dir, 2);
  const auto r = test::run_cli("--plugin-path " + test::test_plugin_dir("zero_lr_optimizer") + " train " +
                               std::string(YOLOFLOW_SOURCE_DIR) + "/pipelines/train-coco128-cpu.json --run-dir " + dir +
                               "/run data=" + data + " epochs=1 imgsz=64 batch=2 stages.train.params.optimizer.plugin=test_zero_lr");
  INFO(r.output);
  // The optimizer is set up while the run is built: refused as bad input, nothing trained or written.
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("stages.train.params.optimizer: ZeroLr() left the 'weights' group with learning rate 0") !=
        std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/run/weights"));
  CHECK_FALSE(fs::exists(dir + "/run/results.csv"));
  test::remove_tree(dir);
}
