// The pipelines users start from (pipelines/*.json): each one is documented ("_doc"), valid,
// and, when it trains, actually starts training: one batch on this CPU at a small size with
// the data where the tests find coco128; one that validates or predicts runs over coco128's
// val split with a checkpoint the training ones wrote. A pipeline that only validates could still fail at
// construction (a precision the device lacks, weights that do not fit): this runs it.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/coco_subset.h"
#include "support/paths.h"
#include "support/run_cli.h"
#include "support/train_pipeline.h"

using namespace yoloflow;
namespace fs = std::filesystem;

namespace {

std::vector<fs::path> shipped_pipelines() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(std::string(YOLOFLOW_SOURCE_DIR) + "/pipelines")) {
    // Sweep files (a base pipeline and a grid) live here too; tests/integration/sweep_test.cpp checks them.
    if (e.path().extension() == ".json" && e.path().filename().string().rfind("sweep-", 0) != 0) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The name of the stage using the sink `plugin`, or "" when the pipeline has none.
std::string stage_of(const nlohmann::json& doc, const std::string& plugin) {
  if (!doc.contains("stages") || !doc["stages"].is_object()) return "";
  for (const auto& [name, stage] : doc["stages"].items()) {
    if (stage.is_object() && stage.value("plugin", "") == plugin) return name;
  }
  return "";
}

}  // namespace

TEST_CASE("every shipped pipeline is documented, valid, and a training one trains a batch") {
  const auto pipelines = shipped_pipelines();
  REQUIRE(pipelines.size() >= 5);
  const std::string data = test::coco128_dir() + "/data.yaml";
  const auto dir = test::temp_dir("shipped-pipelines");
  int trained = 0;
  for (const auto& file : pipelines) {
    CAPTURE(file.string());
    const auto doc = nlohmann::json::parse(test::read_file(file.string()), nullptr, false);
    REQUIRE_FALSE(doc.is_discarded());
    CHECK(doc.value("_doc", "").size() > 40);

    // Where the data is on this machine (the files name ../../shared beside the checkout).
    std::string data_overrides;
    for (const auto& [name, stage] : doc["stages"].items()) {
      if (stage.is_object() && stage.contains("params") && stage["params"].contains("data")) {
        data_overrides += " stages." + name + ".params.data=" + data;
      }
    }
    auto valid = test::run_cli("validate " + file.string() + data_overrides);
    INFO(valid.output);
    CHECK(valid.exit_code == 0);

    const std::string train = stage_of(doc, "train");
    if (train.empty()) continue;
    const std::string run = dir + "/" + file.stem().string();
    std::string args = "train " + file.string() + " --run-dir " + run + data_overrides +
                       " device=cpu imgsz=64 workers=1 stages.batch.params.batch=2 stages." + train +
                       ".params.device=cpu stages." + train + ".params.max_steps=1";
    // fp16 autocast needs a GPU (LibTorch 1.13 has none on the CPU): bf16 stands in here.
    const auto& train_params = doc["stages"][train]["params"];
    if (train_params.contains("precision") && train_params["precision"].value("plugin", "") == "amp_fp16") {
      args += " stages." + train + ".params.precision.plugin=amp_bf16";
    }
    if (doc["stages"][train]["params"].contains("weights")) {
      args += " stages." + train + ".params.weights=" + test::fixtures_dir() + "/yolo11n-parity/yolo11n.pt";
    }
    auto r = test::run_cli(args, "OMP_NUM_THREADS=1 ");
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("stopped: max_steps") != std::string::npos);
    CHECK(fs::exists(run + "/weights/last.pt"));
    ++trained;
  }
  CHECK(trained >= 4);

  // The pipelines that use trained weights run with the checkpoint one of those wrote.
  const std::string weights = dir + "/train-coco128-cpu/weights/last.pt";
  REQUIRE(fs::exists(weights));
  int used_weights = 0;
  for (const auto& file : pipelines) {
    CAPTURE(file.string());
    const auto doc = nlohmann::json::parse(test::read_file(file.string()));
    for (const std::string sink : {"val", "predict"}) {
      const std::string stage = stage_of(doc, sink);
      if (stage.empty()) continue;
      const std::string run = dir + "/" + file.stem().string();
      auto r = test::run_cli("run " + file.string() + " --run-dir " + run + " stages.source.params.data=" + data +
                                 " device=cpu imgsz=64 stages." + stage + ".params.weights=" + weights,
                             "OMP_NUM_THREADS=1 ");
      INFO(r.output);
      CHECK(r.exit_code == 0);
      if (sink == "val") {
        const auto m = nlohmann::json::parse(test::read_file(run + "/metrics.json"));
        CHECK(m.at("images") == 128);  // coco128's val split
        CHECK(r.output.find("mAP50-95") != std::string::npos);
      } else {
        CHECK(nlohmann::json::parse(test::read_file(run + "/predictions.json")).size() == 128);
      }
      ++used_weights;
    }
  }
  CHECK(used_weights == 2);
  test::remove_tree(dir);
}

TEST_CASE("Ultralytics-style words on the command line set the pipeline paths they mean") {
  const std::string data = test::coco128_dir() + "/data.yaml";
  const std::string file = std::string(YOLOFLOW_SOURCE_DIR) + "/pipelines/train-coco128.json";
  const auto r = test::run_cli("validate " + file + " --print-resolved data=" + data +
                               " model=yolo11s batch=8 device=0 workers=2 name=exp patience=7 lr0=0.002 epochs=3");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  // The pipeline's optimizer is `auto`, which chooses its own lr0: Ultralytics' warning comes first.
  CHECK(r.output.find("optimizer=auto chooses its own learning rate and momentum, so lr0 given here changes nothing") <
        r.output.find('{'));
  const auto doc = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  const std::string train = stage_of(doc, "train");
  REQUIRE_FALSE(train.empty());
  const auto& tp = doc["stages"][train]["params"];
  CHECK(tp["data"] == data);                          // the train sink's data and...
  CHECK(doc["stages"]["source"]["params"]["data"] == data);  // ...the source's: one word, both
  CHECK(tp["model"]["plugin"] == "yolo11");
  CHECK(tp["model"]["params"]["scale"] == "s");
  CHECK(tp["callbacks"][1]["plugin"] == "early_stopping");  // patience= is its parameter
  CHECK(tp["callbacks"][1]["params"]["patience"] == 7);
  CHECK(tp["optimizer"]["params"]["lr0"] == 0.002);
  CHECK(doc["stages"]["batch"]["params"]["batch"] == 8);
  CHECK(doc["device"] == "cuda:0");
  CHECK(doc["workers"] == 2);
  CHECK(doc["name"] == "exp");
  CHECK(doc["epochs"] == 3);
  // A word that is nothing here is still refused, with a suggestion.
  const auto bad = test::run_cli("validate " + file + " pateince=7");
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("did you mean") != std::string::npos);
}

TEST_CASE("a pipeline names its dataset once; stages reading datasets of other class counts are refused") {
  const std::string file = std::string(YOLOFLOW_SOURCE_DIR) + "/pipelines/train-coco128.json";
  const auto r = test::run_cli("validate " + file + " --print-resolved");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto doc = nlohmann::json::parse(r.output);
  const std::string train = stage_of(doc, "train");
  // The top-level data reaches the source (training images) and the train sink (validation, names).
  const std::string data = doc["stages"]["source"]["params"]["data"].get<std::string>();
  CHECK(fs::path(data).filename() == "data.yaml");
  CHECK(fs::exists(data));
  CHECK(doc["stages"][train]["params"]["data"] == data);

  // One stage pointed elsewhere, at a one-class dataset: found before anything runs.
  const auto dir = test::temp_dir("one-dataset");
  test::write_file(dir + "/one.yaml", "path: .\ntrain: x.txt\nval: x.txt\nnames: [thing]\n");
  test::write_file(dir + "/x.txt", "");
  const auto split = test::run_cli("validate " + file + " stages.source.params.data=" + dir + "/one.yaml");
  INFO(split.output);
  CHECK(split.exit_code == 2);
  CHECK(split.output.find("names 80 classes, but stages.source.params.data (" + dir + "/one.yaml) names 1") !=
        std::string::npos);
  // data= sets them all; a relative path is read from the working directory; a missing file is named.
  const auto both = test::run_cli("validate " + file + " --print-resolved data=one.yaml", "cd " + dir + " && ");
  INFO(both.output);
  REQUIRE(both.exit_code == 0);
  const auto doc2 = nlohmann::json::parse(both.output);
  CHECK(doc2["stages"]["source"]["params"]["data"] == dir + "/one.yaml");
  CHECK(doc2["stages"][train]["params"]["data"] == dir + "/one.yaml");
  const auto missing = test::run_cli("validate " + file + " data=" + dir + "/nope.yaml");
  CHECK(missing.exit_code == 2);
  CHECK(missing.output.find(dir + "/nope.yaml does not exist") != std::string::npos);
}

TEST_CASE("validate reads the data.yaml: the splits the stages read must be listed and exist, the model's classes agree") {
  const std::string file = std::string(YOLOFLOW_SOURCE_DIR) + "/pipelines/train-coco128.json";
  const auto dir = test::temp_dir("validate-splits");
  // A Roboflow export whose valid/ folder was not copied: train resolves (../train/images is
  // tried as train/images), val does not.
  fs::create_directories(dir + "/rf/train/images");
  test::write_file(dir + "/rf/data.yaml", "train: ../train/images\nval: ../valid/images\nnames:\n" + [] {
    std::string names;
    for (int i = 0; i < 80; ++i) names += "  - c" + std::to_string(i) + "\n";
    return names;
  }());
  const auto r = test::run_cli("validate " + file + " data=" + dir + "/rf/data.yaml");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("stages.train.params.data: 'val' of " + dir + "/rf/data.yaml names ") != std::string::npos);
  CHECK(r.output.find("valid/images, which does not exist") != std::string::npos);
  CHECK(r.output.find("'train' of") == std::string::npos);
  CHECK(r.output.find("1 problem") != std::string::npos);
  // A split the data.yaml does not list, at the parameter that names it.
  fs::create_directories(dir + "/rf/valid/images");
  const auto test_split = test::run_cli("validate " + file + " data=" + dir + "/rf/data.yaml stages.source.params.split=test");
  INFO(test_split.output);
  CHECK(test_split.exit_code == 2);
  CHECK(test_split.output.find("stages.source.params.split: split 'test' is not in " + dir +
                               "/rf/data.yaml (it lists train, val)") != std::string::npos);
  // Unreadable YAML is reported at validate, naming the file.
  test::write_file(dir + "/bad.yaml", "train: [unclosed\n");
  const auto bad = test::run_cli("validate " + file + " data=" + dir + "/bad.yaml");
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("data.yaml '" + dir + "/bad.yaml': not valid YAML") != std::string::npos);
  const auto good = test::run_cli("validate " + file + " data=" + dir + "/rf/data.yaml");
  INFO(good.output);
  CHECK(good.exit_code == 0);
  // A model built for another class count than the data names.
  const auto nc = test::run_cli("validate " + file + " data=" + dir + "/rf/data.yaml stages.train.params.model.params.nc=2");
  CHECK(nc.exit_code == 2);
  CHECK(nc.output.find("stages.train.params.model.params.nc: 2 classes, but " + dir + "/rf/data.yaml names 80") !=
        std::string::npos);
  test::remove_tree(dir);
}

TEST_CASE("yoloflow train data=D.yaml without a pipeline file trains the shipped recipe on D.yaml") {
  const auto dir = test::temp_dir("train-words");
  const std::string data = test::write_coco128_subset(dir, 4);
  // As an Ultralytics user types it; max_steps keeps the test short.
  const auto r = test::run_cli("train data=" + data + " model=yolo11n epochs=1 imgsz=64 batch=2 device=cpu "
                               "workers=1 max_steps=2 --run-dir " + dir + "/run");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("stopped: max_steps") != std::string::npos);
  const auto saved = nlohmann::json::parse(test::read_file(dir + "/run/pipeline.json"));
  CHECK(saved["name"] == "train");
  CHECK(saved["data"] == data);
  CHECK(saved["stages"]["batch"]["params"]["batch"] == 2);
  // Without data= there is nothing to train on: one line says what to give.
  const auto none = test::run_cli("train epochs=3");
  CHECK(none.exit_code == 2);
  CHECK(none.output.find("train needs a pipeline file, --resume RUN_DIR, or data=DATA.yaml") != std::string::npos);
}

TEST_CASE("the components the host uses unnamed are those of core/resources/train-defaults.json, a valid pipeline") {
  const std::string defaults = std::string(YOLOFLOW_SOURCE_DIR) + "/core/resources/train-defaults.json";
  const auto doc = nlohmann::json::parse(test::read_file(defaults));
  const std::string data = test::coco128_dir() + "/data.yaml";
  const auto valid = test::run_cli("validate " + defaults + " data=" + data);
  INFO(valid.output);
  CHECK(valid.exit_code == 0);
  const auto predict = test::run_cli("validate " + std::string(YOLOFLOW_SOURCE_DIR) +
                                     "/core/resources/predict-defaults.json data=" + data +
                                     " stages.predict.params.weights=" + test::fixtures_dir() + "/yolo11n-parity/yolo11n.pt");
  INFO(predict.output);
  CHECK(predict.exit_code == 0);

  // `yoloflow describe train` shows the file's components as the defaults.
  const auto described = test::run_cli("describe train --json");
  REQUIRE(described.exit_code == 0);
  const auto schema = nlohmann::json::parse(described.output);
  const auto& given = doc["stages"][stage_of(doc, "train")]["params"];
  int checked = 0;
  for (const auto& p : schema["params"]) {
    const std::string name = p["name"];
    if (name == "model" || name == "optimizer" || name == "precision" || name == "val_transform") {
      CAPTURE(name);
      CHECK(p["required"] == false);
      CHECK(p["default"] == given[name]);
      ++checked;
    }
  }
  CHECK(checked == 4);
}

TEST_CASE("the train sink's val_transform is checked before training, its errors at its JSON path") {
  const auto dir = test::temp_dir("val-transform");
  test::write_coco128_subset(dir, 4);
  test::TrainPipeline p;
  p.train = R"("val_transform": {"plugin": "flip"}, "device": "cpu")";
  test::write_file(dir + "/train.json", p.json());
  const auto r = test::run_cli("train " + dir + "/train.json --run-dir " + dir + "/run");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("stages.train.params.val_transform.plugin: 'flip' has no `height` and `width` parameters") !=
        std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/run/weights/last.pt"));
  // Not an augmentation at all: refused by `yoloflow validate`, at the same path.
  p.train = R"("val_transform": {"plugin": "collate"})";
  test::write_file(dir + "/train.json", p.json());
  const auto v = test::run_cli("validate " + dir + "/train.json");
  INFO(v.output);
  CHECK(v.exit_code == 2);
  CHECK(v.output.find("stages.train.params.val_transform.plugin") != std::string::npos);
  test::remove_tree(dir);
}
