// Ultralytics' own checkpoints, as their trainer writes them (../shared/fixtures/
// ultralytics-checkpoints: a stripped best.pt and a mid-training last.pt of Ultralytics
// 8.4.56, an input and the model's output on it): read without Python and without running
// their pickle, the model built from them reproduces Ultralytics' output, every command that
// takes weights takes them, and a file whose pickle would run code is refused without it
// running.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "training/model/torch_file.h"
#include "training/model/ultralytics_checkpoint.h"
#include "training/model/weights_io.h"
#include "training/checkpoint/checkpoint_model.h"
#include "support/coco_subset.h"
#include "support/paths.h"
#include "support/plugins.h"
#include "support/run_cli.h"
#include "training/checkpoint/checkpoint.h"
#include "training/trainer/model_word.h"
#include "yoloflow/error.h"

using namespace yoloflow;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string fixture(const std::string& name) { return test::fixtures_dir() + "/ultralytics-checkpoints/" + name; }
std::string best() { return fixture("yolo11n-coco80-best.pt"); }
std::string last() { return fixture("yolo11n-coco80-last-epoch1.pt"); }
json fixtures_json() { return json::parse(test::read_file(fixture("fixtures.json"))).at("yolo11n-coco80"); }

std::vector<std::string> fixture_names() {
  const json names = fixtures_json().at("names");
  std::vector<std::string> out(names.size());
  for (const auto& [k, v] : names.items()) out.at(std::stoul(k)) = v.get<std::string>();
  return out;
}

// A tensor Python's torch.save wrote (the fixture's input and reference output).
torch::Tensor saved_tensor(const std::string& path) {
  core::TorchFile f = core::TorchFile::open(path);
  return f.tensor(f.root(), "root").clone();
}

// The CLI's error is one line naming what it should, with no library internals around it.
void check_refused(const test::CliResult& r, const std::string& expected) {
  INFO(r.output);
  CHECK(r.exit_code == kExitInvalid);
  CHECK(r.output.find(expected) != std::string::npos);
  for (const char* internal : {"Exception raised from", "frame #", "bad_alloc", "basic_ios", "filesystem error",
                               "PytorchStreamReader"}) {
    CHECK(r.output.find(internal) == std::string::npos);
  }
  std::size_t errors = 0;
  for (auto at = r.output.find("error: "); at != std::string::npos; at = r.output.find("error: ", at + 1)) ++errors;
  CHECK(errors == 1);
}

test::CliResult python(const std::string& args) { return test::run_shell(test::python() + " " + args); }

// tests/support/edit_pickled_checkpoint.py: best.pt with its pickled tree edited; returns what
// the script printed (the payload's offset, for the payload edit).
std::string edited(const std::string& edit, const std::string& out, const std::string& marker = "") {
  const auto r = python(std::string(YOLOFLOW_SOURCE_DIR) + "/tests/support/edit_pickled_checkpoint.py " + best() + " " +
                        out + " " + edit + (marker.empty() ? "" : " " + marker));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return r.output;
}

}  // namespace

TEST_CASE("ultralytics checkpoint: best.pt and last.pt load with their architecture, classes and train args") {
  const json fx = fixtures_json();
  {
    core::TorchFile f = core::TorchFile::open(best());
    REQUIRE(core::is_ultralytics_checkpoint(f.root()));
    const auto u = core::read_ultralytics_checkpoint(f);
    CHECK(u.weights_entry == "model");  // best.pt is stripped: its ema is None, model is the EMA
    CHECK(u.weights.size() == fx.at("state_dict_tensors").get<std::size_t>());
    CHECK(u.weights.front().first == "model.0.conv.weight");
    CHECK(u.weights.back().first == "model.23.dfl.conv.weight");
    CHECK((u.weights.front().second.scalar_type() == torch::kHalf));
    CHECK(u.model_class == "ultralytics.nn.tasks.DetectionModel");
    CHECK(u.scale == fx.at("scale").get<std::string>());
    CHECK(u.architecture() == "yolo11n");
    CHECK(u.nc == fx.at("nc").get<int>());
    CHECK(u.names == fixture_names());
    CHECK(u.strides == std::vector<double>{8, 16, 32});
    CHECK(u.version == fx.at("ultralytics").get<std::string>());
    CHECK(u.date.rfind("2026-12-02T", 0) == 0);
    REQUIRE(u.epoch.has_value());
    CHECK(*u.epoch == -1);
    CHECK(u.train_args.at("imgsz") == 320);
    CHECK(u.train_args.at("epochs") == 2);
    CHECK(u.train_args.at("batch") == 8);
    CHECK(u.train_args.at("task") == "detect");
    CHECK(u.train_metrics.contains("metrics/mAP50-95(B)"));
  }
  {
    core::TorchFile f = core::TorchFile::open(last());
    REQUIRE(core::is_ultralytics_checkpoint(f.root()));
    const auto u = core::read_ultralytics_checkpoint(f);
    CHECK(u.weights_entry == "ema");  // mid-training: model is None, the EMA is what validation used
    CHECK(u.weights.size() == 499);
    CHECK(u.names == fixture_names());
    REQUIRE(u.epoch.has_value());
    CHECK(*u.epoch == 0);
    CHECK(u.train_args.at("epochs") == 2);
    CHECK(u.train_args.at("imgsz") == 320);
    // The keys fixtures.json lists for last.pt are what the file holds.
    std::vector<std::string> keys;
    for (std::size_t k = 0; k + 1 < f.root().items.size(); k += 2) keys.push_back(f.root().items[k]->s);
    std::sort(keys.begin(), keys.end());
    auto listed = fx.at("last_keys").get<std::vector<std::string>>();
    std::sort(listed.begin(), listed.end());
    CHECK(keys == listed);
  }
  // read_weights takes them as every weights file: the same tensors, the EMA where it is.
  CHECK(core::read_weights(best()).size() == 499);
  const auto ema = core::read_weights(last());
  const auto model_entry = core::read_weights(last(), "ema");
  REQUIRE(ema.size() == model_entry.size());
  CHECK(torch::equal(ema[10].second, model_entry[10].second));
  CHECK_THROWS_WITH_AS(core::read_weights(last(), "model"), doctest::Contains("whose 'model' entry is None"), InvalidInput);
}

TEST_CASE("ultralytics checkpoint: the model built from best.pt reproduces Ultralytics' output on its input") {
  auto loaded = core::load_checkpoint_model(test::plugins_with("yolo11").registry(), best(), torch::Device(torch::kCPU),
                                            "--weights");
  CHECK(loaded.model->architecture() == "yolo11n");
  CHECK(loaded.weights_kind == "Ultralytics");
  CHECK(loaded.described.names == fixture_names());
  CHECK(loaded.model->head().nc == 80);
  const auto input = saved_tensor(fixture("yolo11n-coco80-input.pt"));
  const auto ref = saved_tensor(fixture("yolo11n-coco80-ref.pt"));
  REQUIRE(input.sizes() == torch::IntArrayRef({1, 3, 320, 320}));
  REQUIRE(ref.sizes() == torch::IntArrayRef({1, 84, 2100}));
  torch::NoGradGuard no_grad;
  auto& m = *loaded.model;
  const auto d = m.decode(m.forward_train(input));
  const auto b = d.boxes[0];  // (A, 4) xyxy in pixels
  const auto xywh = torch::stack({(b.select(1, 0) + b.select(1, 2)) / 2, (b.select(1, 1) + b.select(1, 3)) / 2,
                                  b.select(1, 2) - b.select(1, 0), b.select(1, 3) - b.select(1, 1)},
                                 0);
  const auto ours = torch::cat({xywh, d.scores[0].transpose(0, 1)}, 0).unsqueeze(0);
  const double box_err = (ours.slice(1, 0, 4) - ref.slice(1, 0, 4)).abs().max().item<double>();
  const double score_err = (ours.slice(1, 4, 84) - ref.slice(1, 4, 84)).abs().max().item<double>();
  MESSAGE("Ultralytics best.pt parity: max |box| error " << box_err << " px, max |score| error " << score_err);
  CHECK(box_err < 1e-3);
  CHECK(score_err < 1e-4);
}

TEST_CASE("ultralytics checkpoint: yoloflow info --weights prints what the file says of itself") {
  auto r = test::run_cli("info --weights " + best() + " --imgsz 320");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("weights: " + best() + ": an Ultralytics 8.4.56 checkpoint written 2026-12-02T06:46:10.857837, "
                      "epoch -1 (a finished run's final weights); its model model (Half)") != std::string::npos);
  CHECK(r.output.find("classes: 80: person, bicycle, car, motorcycle, airplane, bus, train, truck, boat, traffic light, "
                      "... (70 more)") != std::string::npos);
  CHECK(r.output.find("train args: task=detect mode=train model=yolo11n.yaml data=/tmp/mini80.yaml epochs=2 ") !=
        std::string::npos);
  CHECK(r.output.find(" imgsz=320 ") != std::string::npos);
  CHECK(r.output.find("train metrics: metrics/precision(B)=0.0 ") != std::string::npos);
  CHECK(r.output.find("yolo11n summary: 24 layers, 2,624,080 parameters") != std::string::npos);
  CHECK(r.output.find("at 320x320 (nc 80)") != std::string::npos);

  r = test::run_cli("info --weights " + last());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("epoch 0 (saved after epoch 1); its ema model (Half)") != std::string::npos);

  // --model must agree with what the file says.
  check_refused(test::run_cli("info --weights " + best() + " --model yolo11s"),
                "--model yolo11s, but --weights " + best() + " holds a yolo11n");
}

TEST_CASE("ultralytics checkpoint: weights import, predict and val take it") {
  const auto dir = test::temp_dir("ultralytics-commands");
  auto r = test::run_cli("weights import " + best() + " --out " + dir + "/imported.pt");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("an Ultralytics 8.4.56 checkpoint, yolo11n, 80 classes, its model model") != std::string::npos);
  CHECK(r.output.find("imported 499 tensors from " + best() + " into yolo11n (nc 80)") != std::string::npos);
  const auto file = core::read_weights(best());
  const auto imported = core::read_weights(dir + "/imported.pt");
  REQUIRE(imported.size() == file.size());
  for (std::size_t i = 0; i < file.size(); ++i) {
    CHECK(imported[i].first == file[i].first);
    CHECK(torch::equal(imported[i].second.to(torch::kFloat), file[i].second.to(torch::kFloat)));
  }

  const std::string image = test::coco128_dir() + "/images/train2017/000000000009.jpg";
  r = test::run_cli("predict --weights " + best() + " --source " + image + " --out " + dir + "/pred --device cpu");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("per image at imgsz 320") != std::string::npos);
  CHECK(fs::exists(dir + "/pred/predictions.json"));

  const std::string data = test::write_coco128_subset(dir, 2);
  // No --imgsz: the file's own (320), as Ultralytics' val keeps a checkpoint's imgsz.
  r = test::run_cli("val --weights " + last() + " --data " + data + " --device cpu --out " + dir + "/val");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("yolo11n (Ultralytics EMA weights of " + last() + ") on cpu") != std::string::npos);
  CHECK(r.output.find(" at imgsz 320,") != std::string::npos);
  const json m = json::parse(test::read_file(dir + "/val/metrics.json"));
  CHECK(m.at("images") == 2);
  CHECK(m.at("imgsz") == 320);
#ifdef YOLOFLOW_WITH_ONNX
  r = test::run_cli("export --weights " + best() + " --out " + dir + "/best.onnx");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(fs::file_size(dir + "/best.onnx") > 1000000);
#endif
}

TEST_CASE("ultralytics checkpoint: model=FILE.pt stands for its architecture, its weights and its image size") {
  const auto words = core::expand_model_words({"data=d.yaml", "model=" + best(), "epochs=3"});
  CHECK(words == std::vector<std::string>{"data=d.yaml", "model=yolo11n", "weights=" + best(), "imgsz=320", "epochs=3"});
  // An image size given wins; a yaml names the architecture; a word stays a word.
  CHECK(core::expand_model_words({"imgsz=64", "model=" + best()}) ==
        std::vector<std::string>{"imgsz=64", "model=yolo11n", "weights=" + best()});
  CHECK(core::expand_model_words({"model=yolo11s.yaml"}) == std::vector<std::string>{"model=yolo11s"});
  CHECK(core::expand_model_words({"model=yolo11s"}) == std::vector<std::string>{"model=yolo11s"});
  CHECK_THROWS_WITH_AS(core::expand_model_words({"model=/nowhere/yolo11n.pt"}),
                       doctest::Contains("model=/nowhere/yolo11n.pt: no such file (yoloflow fetches only Ultralytics' released names"),
                       InvalidInput);
  // A hint names only what is then taken: a missing YOLOv8 file or yaml is not answered with
  // model=yolov8n (no plugin builds it) but with the YOLO11 names.
  for (const std::string word : {"model=yolov8n.pt", "model=yolov8n.yaml"}) {
    CAPTURE(word);
    try {
      core::expand_model_words({word});
      FAIL("taken");
    } catch (const InvalidInput& e) {
      const std::string text = e.what();
      CHECK(text.find("yoloflow builds YOLO11 (yolo11n ... yolo11x, and -seg of each)") != std::string::npos);
      CHECK(text.find("model=yolov8n ") == std::string::npos);
      CHECK(text.find("model=yolo11n") != std::string::npos);
    }
  }
  CHECK(core::expand_model_words({"model=yolo11n"}) == std::vector<std::string>{"model=yolo11n"});
  const auto dir = test::temp_dir("model-word");
  core::write_weights(dir + "/sd.pt", core::read_weights(best()));
  CHECK_THROWS_WITH_AS(core::expand_model_words({"model=" + dir + "/sd.pt"}),
                       doctest::Contains(("a plain state dict does not say which model it holds; give model=yolo11n "
                                         "weights=" + dir + "/sd.pt").c_str()),
                       InvalidInput);
}

TEST_CASE("ultralytics checkpoint: train model=FIXTURE.pt fine-tunes from it through the CLI, weights= too") {
  const auto dir = test::temp_dir("ultralytics-finetune");
  const std::string data = test::write_coco128_subset(dir, 4);
  // The pipeline says yolo11s; model=FILE.pt makes it the file's yolo11n.
  auto r = test::train_coco128_cpu(data, dir + "/run", "epochs=1 stages.train.params.model.params.scale=s model=" + best());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("weights: 499/499 tensors from " + best() + " (an Ultralytics 8.4.56 checkpoint, its model)") !=
        std::string::npos);
  CHECK(r.output.find("train: yolo11n on cpu") != std::string::npos);
  const auto ck = core::load_checkpoint(dir + "/run/weights/last.pt");
  CHECK(ck.model.size() == 499);
  CHECK(ck.meta.at("model").at("params").at("scale") == "n");

  // weights= in a pipeline, with a learning rate too small to move anything: the trained
  // convolutions are the file's (fp16 values, held in fp32).
  test::write_file(dir + "/p.json", R"({
  "name": "finetune", "epochs": 1, "imgsz": 64, "device": "cpu", "workers": 1,
  "stages": {
    "source": {"plugin": "yolo_dataset", "params": {"data": ")" + data + R"(", "split": "train"}},
    "letterbox": {"plugin": "letterbox", "input": "source"},
    "batch": {"plugin": "collate", "input": "letterbox", "params": {"batch": 4}},
    "train": {"plugin": "train", "input": "batch", "params": {
      "data": ")" + data + R"(", "weights": ")" + last() + R"(",
      "model": {"plugin": "yolo11", "params": {"scale": "n"}},
      "optimizer": {"plugin": "sgd", "params": {"lr0": 1e-20, "weight_decay": 0, "momentum": 0}},
      "scheduler": {"plugin": "linear"}, "warmup_epochs": 0, "val_every": 0, "ema": false
    }}
  }
})");
  r = test::run_cli("train " + dir + "/p.json --run-dir " + dir + "/run2", "OMP_NUM_THREADS=1 ");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("weights: 499/499 tensors from " + last() + " (an Ultralytics 8.4.56 checkpoint, its ema)") !=
        std::string::npos);
  const auto file = core::read_weights(last());
  const auto tuned = core::load_checkpoint(dir + "/run2/weights/last.pt");
  std::size_t compared = 0;
  for (const auto& [name, t] : tuned.model) {
    if (name.find(".conv.weight") == std::string::npos) continue;
    for (const auto& [fname, ft] : file) {
      if (fname != name) continue;
      CHECK_MESSAGE(torch::allclose(t.to(torch::kFloat), ft.to(torch::kFloat), 0, 1e-6), name);
      ++compared;
    }
  }
  CHECK(compared > 50);

  // Another architecture in the pipeline with weights=: said in the file's terms.
  r = test::run_cli("train " + dir + "/p.json --run-dir " + dir + "/run3 stages.train.params.model.params.scale=s",
                    "OMP_NUM_THREADS=1 ");
  check_refused(r, "train.params.weights: weights file '" + last() + "' holds a yolo11n (an Ultralytics checkpoint), the "
                   "model is a yolo11s: train with model=" + last());
}

TEST_CASE("ultralytics checkpoint: models other than YOLO11 detect or segment are refused in one line; edited scales are read") {
  const auto dir = test::temp_dir("ultralytics-other");
  const std::string data = test::write_coco128_subset(dir, 2);
  // The editing script itself changes nothing else: the tree pickled again reads as best.pt does.
  edited("none", dir + "/none.pt");
  const auto same = core::read_weights(dir + "/none.pt");
  const auto original = core::read_weights(best());
  REQUIRE(same.size() == original.size());
  CHECK(torch::equal(same[5].second, original[5].second));

  edited("segment", dir + "/segment.pt");
  // A DetectionModel whose yaml says Segment: the two disagree.
  check_refused(test::run_cli("info --weights " + dir + "/segment.pt"),
                "--weights " + dir + "/segment.pt holds a DetectionModel whose yaml's head is Segment; a "
                "DetectionModel has a Detect head, a SegmentationModel a Segment head");
  edited("c2f", dir + "/c2f.pt");
  check_refused(test::run_cli("val --weights " + dir + "/c2f.pt --data " + data),
                "layer 2 of its yaml (yolo11n.yaml) is [-1, 2, C2f] where YOLO11 has [-1, 2, C3k2]");
  // Edited scales are read, not refused: the model the row builds, its name carrying the row.
  edited("scales", dir + "/scales.pt");
  const auto scales = test::run_cli("info --weights " + dir + "/scales.pt");
  INFO(scales.output);
  CHECK(scales.exit_code == 0);
  CHECK(scales.output.find("yolo11n[0.33,0.25,1024] summary") != std::string::npos);
  edited("scales-wide", dir + "/wide.pt");
  check_refused(test::run_cli("info --weights " + dir + "/wide.pt"),
                "--weights " + dir + "/wide.pt holds a YOLO11 model whose scale n is [0.5,8,1024], not [depth, width, "
                "max_channels]");
  edited("sppf-identity", dir + "/sppf.pt");
  check_refused(test::run_cli("predict --weights " + dir + "/sppf.pt --source " + test::coco128_dir() +
                              "/images/train2017/000000000009.jpg --out " + dir + "/p"),
                "holds a YOLO11 model whose SPPF (layer 9) has Identity after its first conv, as Ultralytics 8.4 "
                "builds it");
  edited("nan-weight", dir + "/nan.pt");
  check_refused(test::run_cli("weights import " + dir + "/nan.pt --out " + dir + "/x.pt"),
                "weights file '" + dir + "/nan.pt': tensor 'model.0.conv.weight' of its model holds NaN or infinite "
                "values; weights that diverged are refused");
  CHECK_FALSE(fs::exists(dir + "/x.pt"));
}

TEST_CASE("ultralytics checkpoint: a pickle that would run code is refused naming its global and offset; nothing runs") {
  const auto dir = test::temp_dir("ultralytics-evil");
  const std::string marker = dir + "/pwned";
  const std::string data = test::write_coco128_subset(dir, 2);
  const std::string image = test::coco128_dir() + "/images/train2017/000000000009.jpg";
  // Every command that takes weights, on `file`: refused with `expected`, the payload not run.
  auto refused_everywhere = [&](const std::string& file, const std::string& expected) {
    CAPTURE(file);
    check_refused(test::run_cli("val --weights " + file + " --data " + data), expected);
    check_refused(test::run_cli("predict --weights " + file + " --source " + image + " --out " + dir + "/p"), expected);
    check_refused(test::run_cli("info --weights " + file), expected);
    check_refused(test::run_cli("weights import " + file + " --model yolo11n --out " + dir + "/w.pt"), expected);
    check_refused(test::run_cli("weights export " + file + " --out " + dir + "/w.pt"), expected);
    check_refused(test::train_coco128_cpu(data, dir + "/run-model", "epochs=1 model=" + file), expected);
    check_refused(test::train_coco128_cpu(data, dir + "/run-weights", "epochs=1 weights=" + file), expected);
    CHECK_THROWS_WITH_AS(core::read_weights(file), doctest::Contains((expected).c_str()), InvalidInput);
    CHECK_FALSE(fs::exists(marker));
    CHECK_FALSE(fs::exists(dir + "/w.pt"));
  };

  SUBCASE("a class whose __reduce__ returns os.system, builtins.eval or subprocess.Popen") {
    // torch.save pickles each object's reduce tuple as it is: nothing is called while saving.
    test::write_file(dir + "/save.py", R"PY(import os, pickletools, subprocess, sys, torch, zipfile
marker = sys.argv[2]
class System:
    def __reduce__(self): return (os.system, ('touch ' + marker,))
class Eval:
    def __reduce__(self): return (eval, ("__import__('os').system('touch %s')" % marker,))
class Popen:
    def __reduce__(self): return (subprocess.Popen, (['touch', marker],))
for name, payload in (('system', System()), ('eval', Eval()), ('popen', Popen())):
    path = sys.argv[1] + '/' + name + '.pt'
    torch.save({'model': payload, 'epoch': 3}, path)
    pkl = zipfile.ZipFile(path).read(name + '/data.pkl')
    for op, arg, pos in pickletools.genops(pkl):
        if op.name == 'GLOBAL':
            print(name, pos, arg.replace(' ', '.'))
)PY");
    const auto r = python(dir + "/save.py " + dir + " " + marker);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    // Protocol 2 writes Python 3's modules under their Python 2 names: builtins as __builtin__,
    // subprocess.Popen as commands.Popen.
    for (const auto& [name, globals] : std::vector<std::pair<std::string, std::vector<std::string>>>{
             {"system", {"posix.system"}}, {"eval", {"__builtin__.eval", "builtins.eval"}}, {"popen", {"commands.Popen", "subprocess.Popen"}}}) {
      CAPTURE(name);
      const auto at = r.output.find(name + " ");
      REQUIRE(at != std::string::npos);
      std::istringstream line(r.output.substr(at + name.size() + 1));
      std::size_t offset = 0;
      std::string global;
      line >> offset >> global;
      CHECK(std::find(globals.begin(), globals.end(), global) != globals.end());
      refused_everywhere(dir + "/" + name + ".pt", "global '" + global + "' is not allowed (byte " + std::to_string(offset) +
                                                       " of " + name + "/data.pkl)");
    }
  }
  SUBCASE("one hidden in a module's state (a BUILD dict value) of a real checkpoint") {
    const auto printed = edited("payload-state", dir + "/hidden.pt", marker);
    const auto at = printed.find("payload-offset ");
    REQUIRE(at != std::string::npos);
    const std::string offset = std::to_string(std::stoul(printed.substr(at + 15)));
    refused_everywhere(dir + "/hidden.pt", "global 'posix.system' is not allowed (byte " + offset + " of best/data.pkl)");
  }
  SUBCASE("a real checkpoint whose data.pkl is swapped for one written here, byte by byte") {
    // PROTO 4, then builtins.exec by STACK_GLOBAL (the way protocol 4 names globals) and a
    // REDUCE: what `pickle.dumps` writes for a reduce of exec.
    const std::string code = "open('" + marker + "', 'w')";
    std::string pkl = "\x80\x04";
    auto text = [&](const std::string& s) {
      pkl += '\x8c';
      pkl += static_cast<char>(s.size());
      pkl += s;
    };
    text("builtins");
    text("exec");
    const std::size_t stack_global_at = pkl.size();
    pkl += "\x93";
    text(code);
    pkl += "\x85R.";
    test::write_file(dir + "/data.pkl", pkl);
    test::write_file(dir + "/swap.py", R"(import sys, zipfile
src, dst, pkl = zipfile.ZipFile(sys.argv[1]), zipfile.ZipFile(sys.argv[2], 'w'), open(sys.argv[3], 'rb').read()
for n in src.namelist():
    dst.writestr(n, pkl if n.endswith('/data.pkl') else src.read(n))
dst.close()
)");
    const auto r = python(dir + "/swap.py " + best() + " " + dir + "/swapped.pt " + dir + "/data.pkl");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    refused_everywhere(dir + "/swapped.pt",
                       "global 'builtins.exec' is not allowed (byte " + std::to_string(stack_global_at) + " of best/data.pkl)");
  }
}
