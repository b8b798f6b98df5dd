// Ultralytics' arguments as a user types them on every command: each key of Ultralytics 8.4.56's
// default.yaml (tests/fixtures/ultralytics-8.4.56-arguments.txt, checked against the yaml itself
// when the archive is there) works as a word on the commands where Ultralytics takes it, or is
// refused in one line that names it as Ultralytics' argument and says why; values as Python
// writes them; the checkpoint's own defaults on val, predict and export; project/name run folders.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#if YOLOFLOW_WITH_VIDEO
#include <opencv2/videoio.hpp>
#endif

#include "runtime/run/results_csv.h"
#include "runtime/words/ultralytics_arguments.h"
#include "support/coco_subset.h"
#include "support/paths.h"
#include "support/run_cli.h"
#include "training/checkpoint/checkpoint.h"
// Last: CHECK is doctest's, not LibTorch's glog one.
#include "support/doctest_checks.h"

using namespace yoloflow;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct Argument {
  std::string key;
  std::set<std::string> modes;
  std::string default_value;  // as default.yaml writes it; empty when none
};

std::vector<Argument> ultralytics_arguments() {
  std::ifstream in(std::string(YOLOFLOW_SOURCE_DIR) + "/tests/fixtures/ultralytics-8.4.56-arguments.txt");
  std::vector<Argument> out;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    Argument a;
    const auto colon = line.find(':'), eq = line.find(" =");
    a.key = line.substr(0, colon);
    std::istringstream modes(line.substr(colon + 1, eq - colon - 1));
    for (std::string m; modes >> m;) a.modes.insert(m);
    const std::string rest = line.substr(eq + 2);
    a.default_value = rest.empty() ? "" : rest.substr(rest.find_first_not_of(' '));
    out.push_back(a);
  }
  return out;
}

// A value for each key: Ultralytics' default, else one a user would type.
std::string value_for(const Argument& a, const std::string& data) {
  static const std::map<std::string, std::string> typed = {
      {"time", "1.5"},     {"device", "cpu"},   {"project", "p"}, {"name", "n"},      {"freeze", "10"},
      {"conf", "0.25"},    {"classes", "[0,2]"}, {"line_width", "2"}, {"opset", "17"}, {"workspace", "4"},
      {"end2end", "True"}, {"embed", "[1,2]"},  {"model", "yolo11n"}};
  if (a.key == "data") return data;
  if (a.key == "source") return data;
  if (a.key == "cfg") {
    // A yaml of words (Ultralytics' cfg=): one that asks nothing of any command.
    static const std::string cfg = [] {
      const std::string path = test::temp_dir("ultralytics-cfg") + "/args.yaml";
      test::write_file(path, "verbose: true\n");
      return path;
    }();
    return cfg;
  }
  if (!a.default_value.empty()) return a.default_value;
  return typed.at(a.key);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// The diagnostics of `output` about the word `key` ("PIPELINE: KEY: message").
std::vector<std::string> diagnostics_of(const std::string& output, const std::string& key) {
  std::vector<std::string> out;
  for (const auto& l : lines_of(output)) {
    if (l.find(".json: " + key + ": ") != std::string::npos) out.push_back(l);
  }
  return out;
}

std::string validate_cmd(const std::string& data, const std::string& words) {
  return "validate " + std::string(YOLOFLOW_SOURCE_DIR) + "/pipelines/train-coco128-cpu.json data=" + data + " " + words;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A yoloflow checkpoint trained for one batch at imgsz 64 on 4 coco128 images, in project/name
// folders: P/exp (the first run), P/exp-2 (the second), P/exp again with exist_ok.
struct TinyRuns {
  std::string dir, data, project;
  test::CliResult first, second, reused;
};

const TinyRuns& tiny_runs() {
  static const TinyRuns runs = [] {
    TinyRuns r;
    r.dir = test::temp_dir("ultralytics-words");
    r.data = test::write_coco128_subset(r.dir, 4);
    r.project = r.dir + "/project";
    auto train = [&](const std::string& words) {
      return test::run_cli("train data=" + r.data + " model=yolo11n epochs=1 imgsz=64 batch=2 workers=1 device=cpu "
                           "val=False plots=False amp=False stages.train.params.max_steps=1 project=" + r.project +
                           " name=exp " + words,
                           "OMP_NUM_THREADS=1 ");
    };
    r.first = train("");
    r.second = train("");
    r.reused = train("exist_ok=True");
    return r;
  }();
  return runs;
}

}  // namespace

TEST_CASE("ultralytics words: the fixture is default.yaml's key list, and the docs explain every key") {
  const auto arguments = ultralytics_arguments();
  REQUIRE(arguments.size() > 100);
  const std::string archive = test::shared_dir() + "/anchors/ultralytics-8.4.56.tar.xz";
  if (fs::exists(archive)) {
    const auto yaml = test::run_shell("tar -xJOf " + archive + " ultralytics/cfg/default.yaml");
    REQUIRE(yaml.exit_code == 0);
    std::vector<std::string> keys, defaults;
    for (const auto& l : lines_of(yaml.output)) {
      const auto colon = l.find(':');
      if (l.empty() || !std::islower(static_cast<unsigned char>(l[0])) || colon == std::string::npos) continue;
      keys.push_back(l.substr(0, colon));
      std::string v = l.substr(colon + 1, l.find('#') == std::string::npos ? std::string::npos : l.find('#') - colon - 1);
      v.erase(0, v.find_first_not_of(' '));
      v.erase(v.find_last_not_of(' ') + 1);
      defaults.push_back(v);
    }
    REQUIRE(keys.size() == arguments.size());
    for (std::size_t i = 0; i < keys.size(); ++i) {
      CHECK(keys[i] == arguments[i].key);
      CHECK(defaults[i] == arguments[i].default_value);
    }
  }
  const std::string doc = test::read_file(std::string(YOLOFLOW_SOURCE_DIR) + "/docs/ultralytics-arguments.md");
  for (const auto& a : arguments) {
    CAPTURE(a.key);
    CHECK(contains(doc, "| `" + a.key + "` |"));
    // The defaults a replayed word is compared with are default.yaml's.
    CHECK(core::ultralytics_default(a.key) == a.default_value);
  }
}

TEST_CASE("ultralytics words on train: each of Ultralytics' train keys is a word, or refused with its reason") {
  const std::string dir = test::temp_dir("ultralytics-train-words");
  const std::string data = test::write_coco128_subset(dir, 2);
  std::string all;
  std::vector<Argument> train_keys;
  for (const auto& a : ultralytics_arguments()) {
    if (!a.modes.count("train") || a.key == "data") continue;
    train_keys.push_back(a);
    all += a.key + "=" + value_for(a, data) + " ";
  }
  // Every key at once: each is taken, or refused in its own line (today every train key is
  // taken: a setting, a default, off, or another command's).
  const auto r = test::run_cli(validate_cmd(data, all));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(!contains(r.output, "is not a pipeline setting"));
  CHECK(!contains(r.output, "did you mean"));
  std::string accepted;
  std::set<std::string> refused;
  for (const auto& a : train_keys) {
    CAPTURE(a.key);
    const auto lines = diagnostics_of(r.output, a.key);
    if (lines.empty()) {
      accepted += a.key + "=" + value_for(a, data) + " ";
      continue;
    }
    refused.insert(a.key);
    REQUIRE(lines.size() == 1);
    CHECK(contains(lines[0], "Ultralytics' `" + a.key + "` is not supported by `yoloflow train`: "));
  }
  // The words a detection user expects are taken, not refused.
  for (const std::string key : {"task", "mode", "model", "epochs", "patience", "batch", "imgsz", "save", "save_period", "cache",
                          "device", "workers", "project", "name", "exist_ok", "pretrained", "optimizer", "seed",
                          "deterministic", "cos_lr", "close_mosaic", "resume", "amp", "freeze", "multi_scale", "val", "plots",
                          "lr0", "lrf", "momentum", "weight_decay", "warmup_epochs", "warmup_momentum", "warmup_bias_lr",
                          "box", "cls", "dfl", "nbs", "hsv_h", "hsv_s", "hsv_v", "degrees", "translate", "scale",
                          "shear", "perspective", "flipud", "fliplr", "mosaic", "mixup", "single_cls", "classes",
                          "fraction", "rect", "cutmix", "time"}) {
    CAPTURE(key);
    CHECK(refused.count(key) == 0);
  }
  // And all of them together make a valid pipeline.
  const auto ok = test::run_cli(validate_cmd(data, accepted));
  INFO(ok.output);
  CHECK(ok.exit_code == 0);
}

TEST_CASE("ultralytics words on train: optimizer, schedules, augmentation and switches land in the pipeline") {
  const std::string dir = test::temp_dir("ultralytics-train-effects");
  const std::string data = test::write_coco128_subset(dir, 2);
  const auto r = test::run_cli(validate_cmd(data,
                                            "--print-resolved optimizer=SGD lr0=1e-3 momentum=.9 cos_lr=TRUE "
                                            "close_mosaic=2 mosaic=0.5 mixup=0.1 cutmix=0.3 amp=false val=False plots=False "
                                            "nbs=32 cache=True batch=-1 deterministic=True save_period=-1 time=0.25 device=-1 "
                                            "pretrained=False mode=train task=detect"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const json p = json::parse(r.output.substr(r.output.find('{')));
  const json& train = p.at("stages").at("train").at("params");
  CHECK(train.at("optimizer").at("plugin") == "sgd");
  CHECK(train.at("optimizer").at("params").at("lr0").get<double>() == doctest::Approx(0.001));
  CHECK(train.at("optimizer").at("params").at("momentum").get<double>() == doctest::Approx(0.9));
  CHECK(train.at("scheduler").at("plugin") == "cosine");
  CHECK(train.at("precision").at("plugin") == "fp32");
  CHECK(train.at("val_every") == 0);
  CHECK(train.at("nominal_batch") == 32);
  CHECK(train.at("time").get<double>() == doctest::Approx(0.25));
  for (const auto& c : train.at("callbacks")) CHECK(c.at("plugin") != "train_batch_images");
  CHECK(p.at("stages").at("mosaic").at("params").at("p") == json::parse(R"({"steps": {"0": 0.5, "-2": 0.0}})"));
  // mixup: a stage after the perspective, feeding what read from it.
  const json& mixup = p.at("stages").at("mixup");
  CHECK(mixup.at("plugin") == "mixup");
  CHECK(mixup.at("input") == "perspective");
  // mixup and cutmix close with mosaic, as Ultralytics' close_mosaic closes them.
  CHECK(mixup.at("params").at("p") == json::parse(R"({"steps": {"0": 0.1, "-2": 0.0}})"));
  // cutmix: a stage after mixup, as Ultralytics applies it.
  const json& cutmix = p.at("stages").at("cutmix");
  CHECK(cutmix.at("plugin") == "cutmix");
  CHECK(cutmix.at("input") == "mixup");
  CHECK(cutmix.at("params").at("p") == json::parse(R"({"steps": {"0": 0.3, "-2": 0.0}})"));
  CHECK(p.at("stages").at("hsv").at("input") == "cutmix");
  CHECK(p.at("stages").at("source").at("params").at("cache") == "ram");
  CHECK(p.at("stages").at("batch").at("params").at("batch") == "auto");
  CHECK(p.at("deterministic") == true);
  CHECK(p.at("device") == "auto");  // Ultralytics' -1: an idle GPU, here CUDA when there is one
  CHECK(!contains(r.output, "optimizer=auto chooses"));

  // optimizer=auto ignores lr0 and momentum: Ultralytics' warning.
  const auto warned = test::run_cli(validate_cmd(data, "optimizer=auto lr0=0.02"));
  INFO(warned.output);
  CHECK(warned.exit_code == 0);
  CHECK(contains(warned.output, "optimizer=auto chooses its own learning rate and momentum, so lr0 given here changes "
                                "nothing"));

  // Refused in one line each, with the reason.
  const auto refused = test::run_cli(validate_cmd(data, "optimizer=MuSGD profile=True mode=val task=pose split=test device=0,1"));
  INFO(refused.output);
  CHECK(refused.exit_code == 2);
  CHECK(contains(refused.output, "Ultralytics' `optimizer` MuSGD is not supported by yoloflow: no optimizer plugin of "
                                 "that name is loaded; the optimizers are: adam, adamax, adamw, auto, nadam, radam, rmsprop, sgd"));
  CHECK(contains(refused.output, "Ultralytics' `profile` is not supported by `yoloflow train`: profiling ONNX and "
                                 "TensorRT speeds during training is not built"));
  CHECK(contains(refused.output, "mode=val: the command is the mode"));
  CHECK(contains(refused.output, "device=0,1: one device per process (cpu, 0, cuda:1, -1); several GPUs train "
                                 "through torchrun"));
  CHECK(contains(refused.output, "task=pose: yoloflow trains the tasks detect and segment (the model's name says "
                                 "which: yolo11n, yolo11n-seg; docs/segmentation.md)"));
  CHECK(contains(refused.output, "Ultralytics' `split` is not supported by `yoloflow train`"));
  // Ultralytics' optimizer names in any case, and freeze as a count or a list of layers.
  for (const auto& [word, plugin] : std::vector<std::pair<std::string, std::string>>{
           {"NAdam", "nadam"}, {"RAdam", "radam"}, {"Adamax", "adamax"}, {"RMSProp", "rmsprop"}, {"rmsprop", "rmsprop"}}) {
    CAPTURE(word);
    const auto named = test::run_cli(validate_cmd(data, "--print-resolved optimizer=" + word + " freeze=3"));
    INFO(named.output);
    REQUIRE(named.exit_code == 0);
    const json np = json::parse(named.output.substr(named.output.find('{')));
    CHECK(np.at("stages").at("train").at("params").at("optimizer").at("plugin") == plugin);
    CHECK(np.at("stages").at("train").at("params").at("freeze") == json::parse("[0, 1, 2]"));
  }
  for (const auto& [word, layers] : std::vector<std::pair<std::string, std::string>>{
           {"[0,3,5]", "[0, 3, 5]"}, {"None", "[]"}, {"0", "[]"}}) {
    CAPTURE(word);
    const auto frozen = test::run_cli(validate_cmd(data, "--print-resolved freeze=" + word));
    INFO(frozen.output);
    REQUIRE(frozen.exit_code == 0);
    const json fp = json::parse(frozen.output.substr(frozen.output.find('{')));
    CHECK(fp.at("stages").at("train").at("params").at("freeze") == json::parse(layers));
  }
  // A switch written alone is KEY=True, as Ultralytics reads `yolo train ... cos_lr`.
  const auto bare = test::run_cli(validate_cmd(data, "--print-resolved cos_lr single_cls rect amp"));
  INFO(bare.output);
  REQUIRE(bare.exit_code == 0);
  const json bp = json::parse(bare.output.substr(bare.output.find('{')));
  CHECK(bp.at("stages").at("train").at("params").at("scheduler").at("plugin") == "cosine");
  CHECK(bp.at("stages").at("train").at("params").at("train_rect") == true);
  CHECK(bp.at("stages").at("train").at("params").at("precision").at("plugin") == "amp");
  CHECK(bp.at("stages").at("source").at("params").at("single_cls") == true);
  const auto bad_freeze = test::run_cli(validate_cmd(data, "freeze=backbone"));
  CHECK(bad_freeze.exit_code == 2);
  CHECK(diagnostics_of(bad_freeze.output, "freeze").size() == 1);
  CHECK(contains(bad_freeze.output, "freeze=backbone: expected a number of layers to freeze from the first"));
  // A word that is no Ultralytics argument still gets the closest name.
  const auto typo = test::run_cli(validate_cmd(data, "epochz=3"));
  CHECK(contains(typo.output, "did you mean 'epochs'?"));
}

TEST_CASE("ultralytics words: optimizer=NAdam trains, and a run stopped mid-epoch resumes to the same weights") {
  const std::string dir = test::temp_dir("ultralytics-nadam");
  const std::string data = test::write_coco128_subset(dir, 8);
  // 4 batches of 2 with nbs=2: an optimizer step every batch, so a stop after batch 2 leaves
  // NAdam's moments and its momentum product in last.pt for the resumed run to continue from.
  const std::string words = "epochs=1 nbs=2 optimizer=NAdam stages.train.params.cpu_threads=1";
  const auto whole = test::train_coco128_cpu(data, dir + "/whole", words);
  INFO(whole.output);
  REQUIRE(whole.exit_code == 0);
  CHECK(contains(whole.output, "optimizer: NAdam(lr=0.01, betas=(0.937, 0.999))"));

  const auto first = test::train_coco128_cpu(data, dir + "/split", words + " stages.train.params.max_steps=2");
  INFO(first.output);
  REQUIRE(first.exit_code == 0);
  CHECK(contains(first.output, "stopped: max_steps: 2 batches"));
  const auto mid = core::load_checkpoint(dir + "/split/weights/last.pt");
  CHECK(mid.global_step == 2);
  bool mu_product = false;
  for (const auto& [name, t] : mid.optimizer) {
    if (name != "weights.mu_product") continue;
    mu_product = true;
    CHECK(t.item<double>() < 0.9);  // two steps' mu multiplied in
  }
  CHECK(mu_product);

  const auto rest = test::run_cli("train --resume " + dir + "/split stages.train.params.max_steps=0", "OMP_NUM_THREADS=1 ");
  INFO(rest.output);
  REQUIRE(rest.exit_code == 0);
  CHECK(contains(rest.output, "optimizer: NAdam("));
  const auto a = core::load_checkpoint(dir + "/whole/weights/last.pt");
  const auto b = core::load_checkpoint(dir + "/split/weights/last.pt");
  CHECK(a.global_step == 4);
  CHECK(b.global_step == 4);
  REQUIRE(a.model.size() == b.model.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.model.size(); ++i) {
    REQUIRE(a.model[i].first == b.model[i].first);
    const auto d = (a.model[i].second.to(torch::kDouble) - b.model[i].second.to(torch::kDouble)).abs().max();
    worst = std::max(worst, d.item<double>());
  }
  CHECK(worst < 1e-5);
  test::remove_tree(dir);
}

namespace {

// `yoloflow train` on the 4 images of `data` at imgsz 64, batches of 2 (2 steps an epoch), into
// project/name; `words` follow.
test::CliResult tiny_train(const std::string& data, const std::string& project, const std::string& name,
                           const std::string& words) {
  return test::run_cli("train data=" + data + " model=yolo11n imgsz=64 batch=2 workers=1 device=cpu val=False "
                       "amp=False project=" + project + " name=" + name + " " + words,
                       "OMP_NUM_THREADS=1 ");
}

// The files below `dir` whose names end in .png or .jpg.
std::vector<std::string> images_below(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".png" || ext == ".jpg")) out.push_back(fs::relative(e.path(), dir).string());
  }
  return out;
}

}  // namespace

TEST_CASE("ultralytics words on train: plots=False draws no image at all, and results.csv is still written") {
  const std::string dir = test::temp_dir("ultralytics-plots");
  const std::string data = test::write_coco128_subset(dir, 4);
  const auto drawn = tiny_train(data, dir, "drawn", "epochs=1");
  INFO(drawn.output);
  REQUIRE(drawn.exit_code == 0);
  // The default draws: results.png and the first training batches.
  CHECK(fs::exists(dir + "/drawn/results.png"));
  CHECK(fs::exists(dir + "/drawn/train_batch0.jpg"));
  CHECK(contains(drawn.output, "results.png"));
  // The final validation's plots and per-class table, as Ultralytics' trainer leaves them.
  for (const char* f : {"confusion_matrix.png", "confusion_matrix_normalized.png", "BoxPR_curve.png", "BoxF1_curve.png",
                        "BoxP_curve.png", "BoxR_curve.png", "val_batch0_labels.jpg", "val_batch0_pred.jpg"}) {
    CHECK_MESSAGE(fs::exists(dir + "/drawn/" + f), f);
  }
  CHECK(contains(drawn.output, "Box(P"));
  // labels.jpg: every box of the training split (as many as its source counted), in four panels
  // of 800 x 800.
  std::smatch counted;
  REQUIRE(std::regex_search(drawn.output, counted, std::regex("train split of [^\n]*: 4 samples of 4 images \\(0 background\\), ([0-9]+) boxes")));
  CHECK(contains(drawn.output, "train: " + counted[1].str() + " training labels plotted to " + dir + "/drawn/labels.jpg"));
  const cv::Mat labels = cv::imread(dir + "/drawn/labels.jpg");
  REQUIRE(!labels.empty());
  CHECK(labels.cols == 1600);
  CHECK(labels.rows == 1600);
  for (int q = 0; q < 4; ++q) {
    CAPTURE(q);
    cv::Mat gray;
    cv::cvtColor(labels(cv::Rect((q % 2) * 800, (q / 2) * 800, 800, 800)), gray, cv::COLOR_BGR2GRAY);
    CHECK(cv::countNonZero(gray < 200) > 500);  // bars, outlines, histogram cells: not a blank panel
  }

  const auto none = tiny_train(data, dir, "undrawn", "epochs=1 plots=False");
  INFO(none.output);
  REQUIRE(none.exit_code == 0);
  CHECK(images_below(dir + "/undrawn").empty());
  core::ResultsCsv csv(dir + "/undrawn/results.csv");
  csv.load();
  CHECK(csv.rows().size() == 1);
  CHECK(fs::exists(dir + "/undrawn/weights/last.pt"));
  CHECK(!contains(none.output, "results.png"));
}

TEST_CASE("ultralytics words on train: close_mosaic=N closes mosaic at epoch epochs - N, as Ultralytics' trainer") {
  const std::string dir = test::temp_dir("ultralytics-close-mosaic");
  const std::string data = test::write_coco128_subset(dir, 4);
  // The mosaic stage's probability in each epoch, as results.csv records the scheduled values
  // the stage was configured with.
  auto mosaic_p = [&](const std::string& name) {
    core::ResultsCsv csv(dir + "/" + name + "/results.csv");
    csv.load();
    return csv.series("stages.mosaic.params.p");
  };
  using Series = std::vector<double>;
  // Ultralytics closes it when epoch == epochs - close_mosaic: N < epochs for the last N
  // epochs, N == epochs from the first, N > epochs never.
  for (const auto& [n, expected] : std::vector<std::pair<int, Series>>{
           {1, {1, 1, 0}}, {2, {1, 0, 0}}, {3, {0, 0, 0}}, {5, {1, 1, 1}}}) {
    CAPTURE(n);
    const std::string name = "close" + std::to_string(n);
    const auto r = tiny_train(data, dir, name, "epochs=3 plots=False close_mosaic=" + std::to_string(n));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(mosaic_p(name) == expected);
  }
  // A resumed run continues the same schedule: stopped after 3 of its 6 steps (inside the
  // second epoch), it closes mosaic at the same epoch as the uninterrupted run.
  const auto stopped = tiny_train(data, dir, "resumed", "epochs=3 plots=False close_mosaic=2 "
                                                        "stages.train.params.max_steps=3");
  INFO(stopped.output);
  REQUIRE(stopped.exit_code == 0);
  REQUIRE(contains(stopped.output, "continue with: yoloflow train --resume"));
  const auto rest = test::run_cli("train --resume " + dir + "/resumed stages.train.params.max_steps=0",
                                  "OMP_NUM_THREADS=1 ");
  INFO(rest.output);
  REQUIRE(rest.exit_code == 0);
  CHECK(mosaic_p("resumed") == Series{1, 0, 0});
}

TEST_CASE("ultralytics words on train and val: single_cls, classes, fraction and rect read the data as Ultralytics") {
  const std::string dir = test::temp_dir("ultralytics-data-words");
  // Four coco128 images, sorted: 009 (classes 45, 49, 50), 025 (two giraffes, 23), 030, 034.
  const std::string data = test::write_coco128_subset(dir, 4);
  const auto resolved = test::run_cli(validate_cmd(data, "--print-resolved single_cls=True classes=[23,0] fraction=.5 "
                                                         "rect=True mosaic=1.0 mixup=0.2"));
  INFO(resolved.output);
  REQUIRE(resolved.exit_code == 0);
  const json p = json::parse(resolved.output.substr(resolved.output.find('{')));
  const json& source = p.at("stages").at("source").at("params");
  CHECK(source.at("single_cls") == true);
  CHECK(source.at("classes") == json::parse("[23, 0]"));
  CHECK(source.at("fraction").get<double>() == doctest::Approx(0.5));
  CHECK(p.at("stages").at("train").at("params").at("train_rect") == true);
  // Rectangular training comes without mosaic and mixup, whatever else asks for them.
  CHECK(p.at("stages").at("mosaic").at("params").at("p").get<double>() == 0.0);
  CHECK(!p.at("stages").contains("mixup"));
  for (const auto& [word, line] : std::vector<std::pair<std::string, std::string>>{
           {"fraction=0", "fraction=0: expected a share of the train split's images, above 0 and at most 1"},
           {"classes=[person]", "classes=[person]: expected class ids"},
           {"single_cls=maybe", "single_cls=maybe: expected True or False"}}) {
    CAPTURE(word);
    const auto bad = test::run_cli(validate_cmd(data, word));
    CHECK(bad.exit_code == 2);
    CHECK(contains(bad.output, line));
  }

  // Trained so: the first half of the train split, only the giraffes, as one class named 'item', in
  // rectangular batches (640x480 and 640x427 at imgsz 128: one batch of 96 x 128).
  const std::string project = dir + "/project";
  const auto trained = test::run_cli("train data=" + data + " model=yolo11n epochs=1 imgsz=128 batch=2 workers=1 "
                                     "device=cpu amp=False single_cls=True classes=23 fraction=0.5 "
                                     "rect=True project=" + project + " name=one",
                                     "OMP_NUM_THREADS=1 ");
  INFO(trained.output);
  REQUIRE(trained.exit_code == 0);
  CHECK(contains(trained.output, "train split of " + dir + ": 2 samples of 2 images (1 background), 2 boxes, 1 classes"));
  CHECK(contains(trained.output, "val split of " + dir + ": 4 samples of 4 images (3 background), 2 boxes, 1 classes"));
  CHECK(contains(trained.output, "rectangular training batches: 1 batches of up to 2 images ordered by aspect ratio, "
                                 "shapes from 96x128 to 96x128"));
  // The batch trained is that shape: its drawing is its two 96 x 128 images side by side.
  const cv::Mat drawn = cv::imread(project + "/one/train_batch0.jpg");
  REQUIRE(!drawn.empty());
  CHECK(drawn.rows == 96);
  CHECK(drawn.cols == 256);
  // A pipeline none of whose augmentations takes a batch's shape cannot train rectangular
  // batches: refused in one line, before a run folder is made.
  test::write_file(dir + "/no-shape.json", R"({"name": "no-shape", "epochs": 1, "imgsz": 64, "device": "cpu",
    "stages": {"source": {"plugin": "yolo_dataset", "params": {"data": "data.yaml", "split": "train"}},
               "flip": {"plugin": "flip", "input": "source"},
               "batch": {"plugin": "collate", "input": "flip", "params": {"batch": 2}},
               "train": {"plugin": "train", "input": "batch", "params": {"data": "data.yaml",
                         "scheduler": {"plugin": "linear"}, "train_rect": true}}}})");
  const auto no_shape = test::run_cli("train " + dir + "/no-shape.json --run-dir " + dir + "/no-shape-run");
  CHECK(no_shape.exit_code == 2);
  CHECK(contains(no_shape.output, "stages.train.params.train_rect: no augmentation stage of this pipeline takes a "
                                  "batch's shape as `height` and `width`"));
  CHECK(!fs::exists(dir + "/no-shape-run"));
  // Its checkpoint detects one class, and val reads the data as training did.
  const auto val = test::run_cli("val model=" + project + "/one/weights/last.pt batch=2 device=cpu project=" + project +
                                 " name=v1");
  INFO(val.output);
  REQUIRE(val.exit_code == 0);
  CHECK(contains(val.output, "val split of " + dir + ": 4 samples of 4 images (3 background), 2 boxes, 1 classes"));
  CHECK(contains(val.output, "item"));

  // val of an 80-class checkpoint as one class: labels and detections are class 0.
  const auto& runs = tiny_runs();
  REQUIRE(runs.first.exit_code == 0);
  const std::string weights = runs.project + "/exp/weights/last.pt";
  const auto one = test::run_cli("val model=" + weights + " data=" + data + " batch=2 device=cpu single_cls=True "
                                 "project=" + project + " name=v2");
  INFO(one.output);
  REQUIRE(one.exit_code == 0);
  CHECK(contains(one.output, "4 samples of 4 images (0 background), 13 boxes, 1 classes"));
  const json m = json::parse(test::read_file(project + "/v2/metrics.json"));
  CHECK(m.at("single_cls") == true);
  const auto some = test::run_cli("val model=" + weights + " data=" + data + " batch=2 device=cpu classes=[23,22] "
                                  "project=" + project + " name=v3");
  INFO(some.output);
  REQUIRE(some.exit_code == 0);
  CHECK(contains(some.output, "4 samples of 4 images (2 background), 3 boxes, 80 classes"));
  CHECK(json::parse(test::read_file(project + "/v3/metrics.json")).at("classes") == json::parse("[23, 22]"));
  const auto wrong = test::run_cli("val model=" + weights + " data=" + data + " device=cpu classes=[80]");
  CHECK(wrong.exit_code == 2);
  CHECK(contains(wrong.output, "classes: class 80 is not one of data.yaml"));
}

TEST_CASE("ultralytics words: project/name run folders follow Ultralytics' rules (name, name-2, exist_ok)") {
  const auto& runs = tiny_runs();
  INFO(runs.first.output);
  INFO(runs.second.output);
  INFO(runs.reused.output);
  REQUIRE(runs.first.exit_code == 0);
  CHECK(contains(runs.first.output, "run folder: " + runs.project + "/exp\n"));
  CHECK(fs::exists(runs.project + "/exp/weights/last.pt"));
  REQUIRE(runs.second.exit_code == 0);
  // Ultralytics 8.4's increment_path: NAME-2, NAME-3, ...
  CHECK(contains(runs.second.output, "run folder: " + runs.project + "/exp-2\n"));
  CHECK(!fs::exists(runs.project + "/exp2"));
  REQUIRE(runs.reused.exit_code == 0);
  CHECK(contains(runs.reused.output, "run folder: " + runs.project + "/exp\n"));
  CHECK(!fs::exists(runs.project + "/exp-3"));
}

TEST_CASE("ultralytics words on val: the checkpoint's dataset and imgsz, COCO json, the speed line, refusals") {
  const auto& runs = tiny_runs();
  REQUIRE(runs.first.exit_code == 0);
  const std::string weights = runs.project + "/exp/weights/last.pt";
  const std::string out_project = runs.dir + "/val-project";
  // No data= and no imgsz=: the run's dataset and its imgsz 64, as Ultralytics' val takes them.
  const auto r = test::run_cli("detect val model=" + weights + " batch=2 conf=0.001 iou=0.7 max_det=300 split=val "
                               "device=cpu rect=True save_json=True plots=False project=" + out_project +
                               " name=v mode=val task=detect");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.output, "; " + runs.data + " split 'val', rectangular batches of 2 at imgsz 64"));
  CHECK(contains(r.output, "ms preprocess, "));
  CHECK(contains(r.output, "ms inference, "));
  CHECK(contains(r.output, "ms loss, "));
  CHECK(contains(r.output, "ms postprocess per image"));
  // Each phase is timed: the model's forward takes time.
  const auto speed = r.output.find("Speed: ");
  REQUIRE(speed != std::string::npos);
  const auto inference = r.output.find("ms preprocess, ", speed) + std::string("ms preprocess, ").size();
  CHECK(std::stod(r.output.substr(inference)) > 0.0);
  const json m = json::parse(test::read_file(out_project + "/v/metrics.json"));
  CHECK(m.at("data") == runs.data);
  CHECK(m.at("imgsz") == 64);
  // COCO results: a list of {image_id, file_name, category_id, bbox [x, y, w, h], score}.
  const json p = json::parse(test::read_file(out_project + "/v/predictions.json"));
  REQUIRE(p.is_array());
  for (const auto& d : p) {
    CHECK(d.at("image_id").is_number_integer());  // coco128's files are numbered
    CHECK(d.at("category_id").get<int>() >= 1);
    CHECK(d.at("bbox").size() == 4);
    CHECK(d.at("bbox")[2].get<double>() >= 0);
    CHECK(d.at("score").get<double>() >= 0.001);
  }
  // A second run with the same project/name goes to v-2.
  const auto again = test::run_cli("val model=" + weights + " batch=2 device=cpu project=" + out_project + " name=v");
  INFO(again.output);
  CHECK(again.exit_code == 0);
  CHECK(fs::exists(out_project + "/v-2/metrics.json"));
  // A relative project lies under runs/detect of the working folder, as Ultralytics 8.4 puts it;
  // without name= the folder is the command's name.
  const std::string cwd = runs.dir + "/relative";
  fs::create_directories(cwd);
  const auto relative = test::run_cli("val model=" + weights + " batch=2 device=cpu project=mine", "cd " + cwd + " && ");
  INFO(relative.output);
  CHECK(relative.exit_code == 0);
  CHECK(fs::exists(cwd + "/runs/detect/mine/val/metrics.json"));
  CHECK(!fs::exists(cwd + "/mine"));

  // Every key Ultralytics' val takes is a word here or refused in one line; none is unknown.
  for (const auto& a : ultralytics_arguments()) {
    if (!a.modes.count("val")) continue;
    CAPTURE(a.key);
    const auto w = test::run_cli("val " + a.key + "=" + value_for(a, runs.data));
    CHECK(w.exit_code == 2);
    CHECK(!contains(w.output, "takes no word"));
    const bool refused = contains(w.output, "error: Ultralytics' `" + a.key + "` is not supported by `yoloflow val`: ");
    const bool taken = contains(w.output, "--weights is required");
    CHECK((refused || taken || a.key == "model" || a.key == "mode" || a.key == "task"));
  }
  const auto typo = test::run_cli("val model=" + weights + " bach=2");
  CHECK(contains(typo.output, "error: bach=2: `yoloflow val` takes no word 'bach'; did you mean 'batch'?"));
}

TEST_CASE("ultralytics words on export and info: the checkpoint's imgsz, [h, w], refusals") {
  const auto& runs = tiny_runs();
  REQUIRE(runs.first.exit_code == 0);
  const std::string weights = runs.project + "/exp/weights/last.pt";
  const auto info = test::run_cli("info model=" + weights);
  INFO(info.output);
  CHECK(info.exit_code == 0);
  CHECK(contains(info.output, "GFLOPs at 64x64"));
  const auto arch = test::run_cli("info model=yolo11s.yaml imgsz=320");
  CHECK(contains(arch.output, "GFLOPs at 320x320"));
#ifdef YOLOFLOW_WITH_ONNX
  const auto e = test::run_cli("export model=" + weights + " format=onnx simplify=True imgsz=[64,96] opset=17");
  INFO(e.output);
  CHECK(e.exit_code == 0);
  CHECK(contains(e.output, "input  images (1, 3, 64, 96)"));
  const auto own = test::run_cli("export model=" + weights + " format=onnx");
  CHECK(contains(own.output, "input  images (1, 3, 64, 64)"));
#endif
  for (const auto& a : ultralytics_arguments()) {
    if (!a.modes.count("export")) continue;
    CAPTURE(a.key);
    const auto w = test::run_cli("export " + a.key + "=" + value_for(a, runs.data));
    CHECK(!contains(w.output, "takes no word"));
    const bool refused = contains(w.output, "error: Ultralytics' `" + a.key + "` is not supported by `yoloflow export`: ");
    const bool taken = contains(w.output, "--weights is required");
    CHECK((refused || taken || a.key == "model" || a.key == "mode" || a.key == "task"));
  }
  CHECK(contains(test::run_cli("export model=" + weights + " format=engine").output,
                 "--format engine is not written by yoloflow: TensorRT engines are built on the machine that runs them"));
}

TEST_CASE("ultralytics words on predict: label files only with save_txt=True, their conf column only with save_conf") {
  const std::string dir = test::temp_dir("ultralytics-predict-labels");
  const std::string weights = test::fixtures_dir() + "/coco128-val-parity/coco128-yolo11n.pt";
  const std::string image = test::coco128_dir() + "/images/train2017/000000000009.jpg";  // bowls, broccoli
  auto predict = [&](const std::string& name, const std::string& words) {
    const auto r = test::run_cli("predict model=" + weights + " --model yolo11n source=" + image +
                                 " imgsz=320 device=cpu save=False project=" + dir + " name=" + name + " " + words);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    REQUIRE(fs::exists(dir + "/" + name + "/predictions.json"));
    return r.output;
  };
  // Columns of each line of the label file, and the detections predictions.json holds.
  auto columns = [&](const std::string& name) {
    std::vector<std::size_t> out;
    for (const auto& line : lines_of(test::read_file(dir + "/" + name + "/labels/000000000009.txt"))) {
      std::istringstream in(line);
      std::size_t n = 0;
      for (double x; in >> x;) ++n;
      out.push_back(n);
    }
    return out;
  };
  auto detections = [&](const std::string& name) {
    return json::parse(test::read_file(dir + "/" + name + "/predictions.json")).at(0).at("detections").size();
  };

  // Ultralytics' defaults: no labels/ folder at all, and the summary names none.
  const std::string plain = predict("plain", "");
  CHECK(!fs::exists(dir + "/plain/labels"));
  CHECK(!contains(plain, "labels/*.txt"));
  REQUIRE(detections("plain") > 0);
  // save_conf alone changes nothing: it is a column of the label files.
  predict("conf-only", "save_conf=True");
  CHECK(!fs::exists(dir + "/conf-only/labels"));
  // save_txt=True: class cx cy w h per detection; with save_conf=True the confidence after it.
  CHECK(contains(predict("txt", "save_txt=True"), "labels/*.txt"));
  CHECK(columns("txt") == std::vector<std::size_t>(detections("txt"), 5));
  predict("txt-conf", "save_txt=True save_conf=True");
  CHECK(columns("txt-conf") == std::vector<std::size_t>(detections("txt-conf"), 6));
  predict("flags", "--save-txt --save-conf");
  CHECK(test::read_file(dir + "/flags/labels/000000000009.txt") ==
        test::read_file(dir + "/txt-conf/labels/000000000009.txt"));
  predict("txt-false", "save_txt=False save_conf=True");
  CHECK(!fs::exists(dir + "/txt-false/labels"));

  // The options that turned label files off when they were the default are refused in one
  // line naming the option that writes them, before any folder is made.
  for (const auto& [option, named] : std::vector<std::pair<std::string, std::string>>{
           {"--no-labels", "--save-txt (save_txt=True)"}, {"--no-label-conf", "--save-conf (save_conf=True)"}}) {
    CAPTURE(option);
    const auto r = test::run_cli("predict --weights " + weights + " --model yolo11n --source " + image + " --out " + dir +
                                 "/old " + option);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.output, "error: " + option + ": "));
    CHECK(contains(r.output, named));
    CHECK(lines_of(r.output).size() == 1);
    CHECK(!fs::exists(dir + "/old"));
  }
}

// Needs OpenCV's videoio to write the video (a build without it refuses video sources).
#if YOLOFLOW_WITH_VIDEO
TEST_CASE("ultralytics words on predict: a video the test writes, globs, .txt lists, classes by name, refusals") {
  const std::string dir = test::temp_dir("ultralytics-predict");
  // Weights that find coco128's objects (a state dict: its architecture given with --model).
  const std::string weights = test::fixtures_dir() + "/coco128-val-parity/coco128-yolo11n.pt";
  const std::vector<std::string> stems = {"000000000009", "000000000025", "000000000030"};
  // A 6-frame Motion JPEG video at 10 fps of three coco128 images, 320x240, two frames each.
  const std::string video = dir + "/clip.avi";
  {
    cv::VideoWriter writer(video, cv::VideoWriter::fourcc('M', 'J', 'P', 'G'), 10.0, cv::Size(320, 240));
    REQUIRE(writer.isOpened());
    for (const auto& stem : stems) {
      cv::Mat image = cv::imread(test::coco128_dir() + "/images/train2017/" + stem + ".jpg");
      REQUIRE(!image.empty());
      cv::resize(image, image, cv::Size(320, 240));
      writer.write(image);
      writer.write(image);
    }
  }
  const std::string project = dir + "/runs";
  const auto r = test::run_cli("predict model=" + weights + " --model yolo11n source=" + video +
                               " vid_stride=2 imgsz=320 device=cpu save_txt=True save_conf=False line_width=1 "
                               "max_det=5 conf=0.25 iou=0.7 show_labels=True show_conf=True show_boxes=True save=True "
                               "project=" + project + " name=pv");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const std::string out = project + "/pv";
  CHECK(contains(r.output, "video 1/1 (frame 1/3) " + video + ": 320x240, "));
  CHECK(contains(r.output, "video 1/1 (frame 3/3) "));
  CHECK(contains(r.output, "Speed: "));
  CHECK(contains(r.output, "ms postprocess per image at imgsz 320"));
  // The annotated video: every second frame, at the source's size, Motion JPEG in .avi.
  cv::VideoCapture written(out + "/clip.avi");
  REQUIRE(written.isOpened());
  int frames = 0;
  for (cv::Mat f; written.read(f); ++frames) {
    CHECK(f.cols == 320);
    CHECK(f.rows == 240);
  }
  CHECK(frames == 3);
  // Labels per frame as Ultralytics names them, without the confidence column (save_conf=False).
  int boxes = 0;
  for (int frame = 1; frame <= 3; ++frame) {
    const std::string label = out + "/labels/clip_" + std::to_string(frame) + ".txt";
    REQUIRE(fs::exists(label));
    for (const auto& line : lines_of(test::read_file(label))) {
      std::istringstream in(line);
      std::vector<double> v;
      for (double x; in >> x;) v.push_back(x);
      CHECK(v.size() == 5);
      ++boxes;
    }
  }
  CHECK(!fs::exists(out + "/labels/clip_4.txt"));
  CHECK(boxes > 0);
  const json predictions = json::parse(test::read_file(out + "/predictions.json"));
  REQUIRE(predictions.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(predictions[i].at("frame") == i + 1);
    CHECK(predictions[i].at("file") == video);
    CHECK(predictions[i].at("detections").size() <= 5);  // max_det
  }

  // A glob and a .txt list (its relative lines read from the list's folder); classes, crops.
  const std::string images = dir + "/images";
  fs::create_directories(images);
  for (const auto& stem : {stems[0], stems[1], std::string("000000000036")}) {
    fs::copy_file(test::coco128_dir() + "/images/train2017/" + stem + ".jpg", images + "/" + stem + ".jpg");
  }
  test::write_file(images + "/notes.md", "not an image: left out of the glob's matches");
  const auto g = test::run_cli("predict model=" + weights + " --model yolo11n 'source=" + images +
                               "/*6.jpg' device=cpu classes=0 save_crop=True project=" + project +
                               " name=glob");
  INFO(g.output);
  REQUIRE(g.exit_code == 0);
  const json from_glob = json::parse(test::read_file(project + "/glob/predictions.json"));
  REQUIRE(from_glob.size() == 1);  // only 000000000036.jpg (a person) ends in 6.jpg
  REQUIRE(!from_glob[0].at("detections").empty());
  for (const auto& d : from_glob[0].at("detections")) CHECK(d.at("class") == 0);
  // The state dict names its classes by number.
  CHECK(fs::exists(project + "/glob/crops/0/000000000036.jpg"));
  CHECK(!fs::exists(project + "/glob/labels"));  // no save_txt=True: no label files, as in Ultralytics
  // Classes by name: the names of an Ultralytics checkpoint.
  const std::string named = test::fixtures_dir() + "/ultralytics-checkpoints/yolo11n-coco80-best.pt";
  const auto by_name = test::run_cli("predict model=" + named + " source=" + images + "/000000000036.jpg device=cpu "
                                     "classes=[person,car] project=" + project + " name=named");
  INFO(by_name.output);
  CHECK(by_name.exit_code == 0);
  CHECK(contains(by_name.output, "at imgsz 320"));  // the checkpoint's own imgsz
  test::write_file(dir + "/list.txt", "images/" + stems[0] + ".jpg\n\n" + images + "/" + stems[1] + ".jpg\nclip.avi\n");
  const auto l = test::run_cli("predict model=" + weights + " --model yolo11n source=" + dir +
                               "/list.txt imgsz=320 device=cpu vid_stride=3 save_txt=True project=" + project +
                               " name=list");
  INFO(l.output);
  REQUIRE(l.exit_code == 0);
  CHECK(json::parse(test::read_file(project + "/list/predictions.json")).size() == 4);  // 2 images, 2 frames
  CHECK(fs::exists(project + "/list/labels/" + stems[0] + ".txt"));
  CHECK(fs::exists(project + "/list/labels/clip_2.txt"));
  const auto unknown = test::run_cli("predict model=" + named + " source=" + video +
                                     " classes=[unicorn] device=cpu project=" + project);
  CHECK(unknown.exit_code == 2);
  CHECK(contains(unknown.output, "classes: 'unicorn' is not a class name of this model"));
  // Ultralytics' other sources get their own line, not "no such file".
  for (const auto& [source, line] : std::vector<std::pair<std::string, std::string>>{
           {"0", "camera 0 is not supported; predict reads images, videos"},
           {"ftp://example.com/bus.jpg", "this kind of URL is not supported (http:// and https:// are)"},
           {"rtsp://example.com/media.mp4", "streams are not supported"},
           {"screen", "screenshots are not supported"}}) {
    CAPTURE(source);
    const auto other = test::run_cli("predict model=" + named + " source=" + source + " device=cpu project=" + project);
    CHECK(other.exit_code == 2);
    CHECK(contains(other.output, line));
  }

  // Every key Ultralytics' predict takes is a word here or refused in one line.
  for (const auto& a : ultralytics_arguments()) {
    if (!a.modes.count("predict")) continue;
    CAPTURE(a.key);
    const auto w = test::run_cli("predict " + a.key + "=" + value_for(a, video));
    CHECK(!contains(w.output, "takes no word"));
    const bool refused = contains(w.output, "error: Ultralytics' `" + a.key + "` is not supported by `yoloflow predict`: ");
    const bool taken = contains(w.output, "is required");
    CHECK((refused || taken || a.key == "mode"));  // mode=train: "the command is the mode"
  }
}
#endif

TEST_CASE("ultralytics words: cfg=args.yaml replays a run's arguments, the command line's words win, bad files in one line") {
  const std::string dir = test::temp_dir("ultralytics-cfg-replay");
  const std::string data = test::write_coco128_subset(dir, 4);
  // As Ultralytics writes args.yaml: every key, None as null, its defaults beside the run's own.
  test::write_file(dir + "/args.yaml", "task: detect\nmode: train\nmodel: yolo11n.yaml\ndata: " + data +
                                           "\nepochs: 3\nimgsz: 64\nbatch: 2\ncache: false\ndevice: cpu\nworkers: 1\n"
                                           "project: null\nname: null\nexist_ok: false\npretrained: true\n"
                                           "optimizer: auto\nverbose: true\nseed: 0\nclasses: null\nprofile: false\n"
                                           "freeze: null\nlr0: 0.01\nplots: false\ncfg: null\n");
  const std::string run = dir + "/run";
  const auto r = test::run_cli("train cfg=" + dir + "/args.yaml epochs=1 --run-dir " + run, "OMP_NUM_THREADS=1 ");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto pipeline = nlohmann::json::parse(test::read_file(run + "/pipeline.json"));
  CHECK(pipeline["epochs"] == 1);  // the command line's word
  CHECK(pipeline["imgsz"] == 64);  // the file's
  CHECK(pipeline["stages"]["batch"]["params"]["batch"] == 2);
  CHECK_FALSE(fs::exists(run + "/results.png"));  // plots: false
  CHECK_FALSE(fs::exists(fs::current_path() / "None"));  // project: null is no folder

  test::write_file(dir + "/nested.yaml", "epochs: 3\naugment:\n  mosaic: 1.0\n");
  test::write_file(dir + "/broken.yaml", "epochs: [3\n");
  for (const auto& [file, line] : std::vector<std::pair<std::string, std::string>>{
           {dir + "/nested.yaml", "nested.yaml line 3: augment is a mapping"},
           {dir + "/broken.yaml", "broken.yaml is not YAML: line"},
           {dir + "/missing.yaml", "missing.yaml: no such file"}}) {
    CAPTURE(file);
    const auto bad = test::run_cli("train cfg=" + file + " --run-dir " + dir + "/never");
    CAPTURE(bad.output);
    CHECK(bad.exit_code == 2);
    CHECK(contains(bad.output, line));
    CHECK_FALSE(fs::exists(dir + "/never"));
  }
}

TEST_CASE("ultralytics words: a run writes args.yaml under Ultralytics' keys, and cfg=args.yaml asks for the same run") {
  const std::string dir = test::temp_dir("ultralytics-args-yaml");
  const std::string data = test::write_coco128_subset(dir, 4);
  const auto first = test::run_cli("train data=" + data + " model=yolo11n.yaml epochs=1 imgsz=64 batch=2 workers=1 "
                                   "device=cpu lr0=0.02 fliplr=0.25 plots=False project=" + dir + " name=first",
                                   "OMP_NUM_THREADS=1 ");
  INFO(first.output);
  REQUIRE(first.exit_code == 0);
  const std::string args = test::read_file(dir + "/first/args.yaml");
  for (const char* line : {"task: detect\n", "mode: train\n", "model: yolo11n.yaml\n", "epochs: 1\n", "batch: 2\n",
                           "imgsz: 64\n", "device: cpu\n", "lr0: 0.02\n", "fliplr: 0.25\n", "plots: false\n"}) {
    CAPTURE(line);
    CHECK(contains(args, line));
  }
  CHECK(contains(args, "save_dir: " + dir + "/first\n"));
  auto doc = nlohmann::json::parse(test::read_file(dir + "/first/pipeline.json"));
  CHECK(contains(doc["_doc"].get<std::string>(), "This run: `yoloflow train data=" + data + " model=yolo11n.yaml"));

  const auto again = test::run_cli("train cfg=" + dir + "/first/args.yaml project=" + dir + " name=again",
                                   "OMP_NUM_THREADS=1 ");
  INFO(again.output);
  REQUIRE(again.exit_code == 0);
  auto replayed = nlohmann::json::parse(test::read_file(dir + "/again/pipeline.json"));
  doc.erase("_doc");
  replayed.erase("_doc");
  CHECK(doc == replayed);
}

TEST_CASE("ultralytics words: a sweep whose grid key changes nothing is refused before any run") {
  const std::string dir = test::temp_dir("ultralytics-sweep");
  const std::string data = test::write_coco128_subset(dir, 2);
  const std::string base = std::string(YOLOFLOW_SOURCE_DIR) + "/pipelines/train-coco128-cpu.json";
  // train-coco128-cpu.json's optimizer is `auto`, which chooses its own lr0.
  test::write_file(dir + "/lr.json", R"({"name": "lr", "base": ")" + base + R"(", "overrides": {"data": ")" + data +
                                         R"("}, "grid": {"lr0": [0.01, 0.02]}})");
  const auto r = test::run_cli("sweep " + dir + "/lr.json --out " + dir + "/out");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(contains(r.output, "train the same pipeline: lr0=0.02 changes nothing in it (optimizer `auto` chooses its own "
                           "lr0 and momentum"));
  CHECK(contains(r.output, "nothing was started"));
  CHECK(!fs::exists(dir + "/out/lr0=0.02"));
  // With an optimizer that uses lr0 the same grid is two different runs.
  test::write_file(dir + "/sgd.json", R"({"name": "sgd", "base": ")" + base + R"(", "overrides": {"data": ")" + data +
                                          R"(", "optimizer": "SGD"}, "grid": {"lr0": [0.01, 0.02]}})");
  const auto dry = test::run_cli("sweep " + dir + "/sgd.json --out " + dir + "/sgd --dry-run");
  INFO(dry.output);
  CHECK(dry.exit_code == 0);
  CHECK(!contains(dry.output, "invalid"));
}

TEST_CASE("ultralytics words: an Ultralytics checkpoint's train_args replay on train, val and predict; what asks for more is refused") {
  const auto& runs = tiny_runs();
  REQUIRE(runs.first.exit_code == 0);
  const std::string weights = runs.project + "/exp/weights/last.pt";
  // The 109 arguments Ultralytics saved with a run, as `yoloflow info` prints them.
  const auto info = test::run_cli("info model=" + test::fixtures_dir() + "/ultralytics-checkpoints/yolo11n-coco80-best.pt");
  REQUIRE(info.exit_code == 0);
  std::string saved;
  for (const auto& l : lines_of(info.output)) {
    if (l.rfind("train args: ", 0) == 0) saved = l.substr(12);
  }
  REQUIRE(!saved.empty());
  // Its data, device, model and run folder are another machine's: the rest as they were saved.
  std::string words, verb_words;
  std::istringstream in(saved);
  for (std::string w; in >> w;) {
    const std::string key = w.substr(0, w.find('='));
    if (key == "data" || key == "device" || key == "model" || key == "project" || key == "name" || key == "exist_ok") continue;
    words += " " + w;
    if (key != "task" && key != "mode" && key != "source") verb_words += " " + w;
  }
  CHECK(contains(words, "profile=false"));
  CHECK(contains(words, "time=null"));
  const auto train = test::run_cli(validate_cmd(runs.data, "device=cpu" + words));
  INFO(train.output);
  CHECK(train.exit_code == 0);
  CHECK(contains(train.output, "Ultralytics' words that ask nothing of yoloflow train"));
  CHECK(contains(train.output, "tracker=botsort.yaml"));
  const auto val = test::run_cli("val model=" + weights + " data=" + runs.data + " device=cpu" + verb_words +
                                 " --out " + runs.dir + "/replayed-val");
  INFO(val.output);
  CHECK(val.exit_code == 0);
  CHECK(contains(val.output, "note: Ultralytics' words that ask nothing of yoloflow val"));
  CHECK(fs::exists(runs.dir + "/replayed-val/metrics.json"));
  const std::string image = test::coco128_dir() + "/images/train2017/000000000009.jpg";
  const auto predict = test::run_cli("predict model=" + weights + " source=" + image + " data=" + runs.data +
                                     " device=cpu" + verb_words + " --out " + runs.dir + "/replayed-predict");
  INFO(predict.output);
  CHECK(predict.exit_code == 0);

  // Values that ask for behaviour yoloflow lacks are refused as before, one line each.
  const auto profile = test::run_cli(validate_cmd(runs.data, "profile=True copy_paste=0.5"));
  CHECK(profile.exit_code == 2);
  CHECK(contains(profile.output, "Ultralytics' `profile` is not supported by `yoloflow train`"));
  CHECK(contains(profile.output, "Ultralytics' `copy_paste` is not supported by `yoloflow train`"));
  const auto half = test::run_cli("val model=" + weights + " half=True");
  CHECK(half.exit_code == 2);
  CHECK(contains(half.output, "Ultralytics' `half` is not supported by `yoloflow val`"));
}

TEST_CASE("ultralytics words: validate reads model=NAME.yaml and model=WEIGHTS.pt as train does") {
  const auto& runs = tiny_runs();
  REQUIRE(runs.first.exit_code == 0);
  const auto yaml = test::run_cli(validate_cmd(runs.data, "model=yolo11s.yaml --print-resolved"));
  INFO(yaml.output);
  REQUIRE(yaml.exit_code == 0);
  CHECK(contains(yaml.output, "\"scale\": \"s\""));
  const std::string weights = runs.project + "/exp/weights/last.pt";
  const auto pt = test::run_cli(validate_cmd(runs.data, "model=" + weights + " --print-resolved"));
  INFO(pt.output);
  REQUIRE(pt.exit_code == 0);
  CHECK(contains(pt.output, "\"weights\": \"" + weights + "\""));
  const auto missing = test::run_cli(validate_cmd(runs.data, "model=" + runs.dir + "/none.pt"));
  CHECK(missing.exit_code == 2);
  CHECK(contains(missing.output, "none.pt: no such file"));
}
