// `yoloflow weights export --format ultralytics`: a yoloflow checkpoint (a run's last.pt with its
// raw and EMA weights in float32, a run's best.pt with only the EMA in float16) turned into an
// Ultralytics checkpoint by scripts/yoloflow-to-ultralytics.py, which Ultralytics 8.4.56 loads with
// its own loader (YOLO(path)) and whose model gives yoloflow's outputs on the same input, with the
// class names, task and image size kept; and without Ultralytics, one line saying what to install.
// Ultralytics 8.4.56 runs from its source archive (beside the test datasets) with the imaging and plotting
// packages it imports at module level replaced by empty modules (tests/fixtures/
// ultralytics_stand_ins.py, installed by a sitecustomize.py before anything is imported): the
// machine's Python has torch but not those, and the model never calls them.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/paths.h"
#include "support/plugins.h"
#include "support/run_cli.h"
#include "runtime/pipeline/architecture_name.h"
#include "support/tensor_fixture.h"
#include "training/checkpoint/checkpoint.h"
#include "training/checkpoint/checkpoint_model.h"
#include "training/model/model_factory.h"
#include "training/model/torch_file.h"
#include "training/model/ultralytics_checkpoint.h"
#include "training/model/weights_io.h"
#include "yoloflow/error.h"
#include "support/doctest_checks.h"  // last: CHECK is doctest's after LibTorch's headers

using namespace yoloflow;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string anchors() { return test::shared_dir() + "/anchors/ultralytics-8.4.56.tar.xz"; }

// Ultralytics 8.4.56 unpacked once for the test run (removed at its end), and the
// sitecustomize.py that installs the stand-ins: the environment prefix that lets the machine's
// Python import it.
struct UnpackedUltralytics {
  std::string dir = test::temp_dir("ultralytics-8.4.56");
  ~UnpackedUltralytics() { test::remove_tree(dir); }
};

const std::string& ultralytics_env() {
  static const UnpackedUltralytics unpacked;
  static const std::string env = [] {
    const std::string& dir = unpacked.dir;
    const auto r = test::run_shell("tar -C " + dir + " -xJf " + anchors());
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    test::write_file(dir + "/site/sitecustomize.py", "import ultralytics_stand_ins\nultralytics_stand_ins.install()\n");
    fs::create_directories(dir + "/config");
    return "YOLOFLOW_PYTHON=" + test::python() + " YOLO_CONFIG_DIR=" + dir + "/config YOLO_OFFLINE=true PYTHONPATH=" +
           dir + "/site:" + dir + ":" + dir + "/stubs:" + YOLOFLOW_SOURCE_DIR + "/tests/fixtures ";
  }();
  return env;
}

// A yoloflow checkpoint of an Ultralytics model's weights, as `yoloflow train` writes it: its
// model description, names and image size in meta. last.pt: the EMA (the weights to deploy) and
// raw weights that differ from it (a converted model that took them would give other outputs);
// best.pt: only the EMA, in float16.
struct Made {
  std::string path;
  std::string architecture;
  std::vector<std::string> names;
};

Made make_checkpoint(const std::string& ultralytics_file, const std::string& out, bool best, int imgsz) {
  core::TorchFile file = core::TorchFile::open(ultralytics_file);
  const core::UltralyticsCheckpoint u = core::read_ultralytics_checkpoint(file);
  auto model = core::create_model(test::plugins_with("yolo11").registry(), u.architecture(), u.nc);
  core::load_weights(model->module(), u.weights, ultralytics_file);
  core::Checkpoint ck;
  for (const auto& [name, t] : core::module_state(model->module())) {
    ck.ema.emplace_back(name, t.clone());
    ck.model.emplace_back(name, t.is_floating_point() ? t * 0.5 : t.clone());
  }
  std::vector<std::string> names = u.names;
  names.at(0) = "first class (renamed)";  // names come from the yoloflow checkpoint, not from elsewhere
  ck.epoch = 3;
  ck.meta = {{"architecture", u.architecture()}, {"model", u.model_spec()}, {"names", names},
             {"nc", u.nc},                       {"imgsz", imgsz},         {"epochs", 4}};
  core::save_checkpoint(out, best ? core::deployable_checkpoint(ck) : ck);
  return {out, u.architecture(), names};
}

// A yoloflow checkpoint of a model built from a yaml with edited scales (`architecture` carries
// them, "yolo11n[0.5,0.1875,1024]"), its weights as initialised from a fixed seed.
Made make_edited_scales_checkpoint(const std::string& architecture, const std::string& out) {
  torch::manual_seed(11);
  auto model = core::create_model(test::plugins_with("yolo11").registry(), architecture, 80);
  REQUIRE(model->architecture() == architecture);
  core::Checkpoint ck;
  for (const auto& [name, t] : core::module_state(model->module())) {
    ck.ema.emplace_back(name, t.clone());
    ck.model.emplace_back(name, t.clone());
  }
  std::vector<std::string> names;
  for (int c = 0; c < 80; ++c) names.push_back("class " + std::to_string(c));
  const auto name = core::parse_architecture(test::plugins_with("yolo11").registry(), architecture);
  REQUIRE(name);
  json params = core::architecture_params(*name);
  params["nc"] = 80;
  ck.epoch = 3;
  ck.meta = {{"architecture", architecture}, {"model", {{"plugin", "yolo11"}, {"params", params}}}, {"names", names},
             {"nc", 80}, {"imgsz", 96}, {"epochs", 4}};
  core::save_checkpoint(out, ck);
  return {out, architecture, names};
}

// What Ultralytics makes of the exported file: YOLO(path) and its model in eval mode, float32, on
// an image of the fixtures (a tensor, or a dict's "input"); the input and outputs saved for the
// comparison, facts printed as JSON.
const char* kUltralyticsSide = R"PY(
import json, sys
import torch
from ultralytics import YOLO
from ultralytics.nn.modules.block import SPPF

path, out, image = sys.argv[1], sys.argv[2], torch.load(sys.argv[3])
ckpt = torch.load(path, map_location="cpu", weights_only=False)
stored = ckpt["model"]
y = YOLO(path)
m = y.model.float().eval()
x = (image["input"] if isinstance(image, dict) else image).float()
with torch.no_grad():
    pred = m(x)
tensors = {"input": x}
if y.task == "segment":
    tensors["output0"], tensors["proto"] = pred[0][0], pred[0][1]
else:
    tensors["output0"] = pred[0]
torch.save(tensors, out)
sppf = [type(s.cv1.act).__name__ for s in m.modules() if isinstance(s, SPPF)]
print("FACTS " + json.dumps({
    "task": y.task, "names": [y.names[i] for i in range(len(y.names))], "nc": m.yaml["nc"],
    "class": type(m).__name__, "sppf_act": sppf, "stored_dtype": str(next(stored.parameters()).dtype),
    "ema": ckpt["ema"] is None, "epoch": ckpt["epoch"], "optimizer": ckpt["optimizer"] is None,
    "imgsz": y.overrides.get("imgsz"), "version": ckpt["version"], "train_task": ckpt["train_args"]["task"]}))
)PY";

json facts_of(const std::string& output) {
  const auto at = output.rfind("FACTS ");
  REQUIRE(at != std::string::npos);
  return json::parse(output.substr(at + 6, output.find('\n', at) - at - 6));
}

// yoloflow's model of the checkpoint on `input`: output0 as Ultralytics lays it out (1, 4 + nc
// [+ 32], anchors: box centre and size in pixels, class probabilities, mask coefficients), and
// the prototypes of a segmentation model.
std::pair<torch::Tensor, torch::Tensor> yoloflow_outputs(const std::string& checkpoint, const torch::Tensor& input) {
  auto loaded = core::load_checkpoint_model(test::plugins_with("yolo11").registry(), checkpoint,
                                            torch::Device(torch::kCPU), "--weights");
  auto& m = *loaded.model;
  m.module().eval();
  torch::NoGradGuard no_grad;
  const auto d = m.decode(m.forward_train(input));
  const auto b = d.boxes[0];
  const auto xywh = torch::stack({(b.select(1, 0) + b.select(1, 2)) / 2, (b.select(1, 1) + b.select(1, 3)) / 2,
                                  b.select(1, 2) - b.select(1, 0), b.select(1, 3) - b.select(1, 1)},
                                 0);
  std::vector<torch::Tensor> rows = {xywh, d.scores[0].t()};
  torch::Tensor proto;
  if (d.extras.count("mask_coefficients")) {
    rows.push_back(d.extras.at("mask_coefficients")[0].t());
    proto = d.extras.at("prototypes");
  }
  return {torch::cat(rows, 0).unsqueeze(0), proto};
}

void check_round_trip(const Made& made, const std::string& dir, const std::string& image, bool segment,
                      const std::string& expected_dtype) {
  const std::string out = dir + "/model.pt";
  const auto r = test::run_cli("weights export --format ultralytics --weights " + made.path + " --out " + out,
                               ultralytics_env());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("wrote " + out) != std::string::npos);
  CHECK(fs::exists(out));
  for (const auto& e : fs::directory_iterator(dir)) CHECK(e.path().extension() != ".tmp");  // no temporary left

  const std::string script = dir + "/ultralytics_side.py";
  test::write_file(script, kUltralyticsSide);
  const auto py =
      test::run_shell(ultralytics_env() + test::python() + " " + script + " " + out + " " + dir + "/outputs.pt " + image);
  INFO(py.output);
  REQUIRE(py.exit_code == 0);
  const json facts = facts_of(py.output);
  CHECK(facts.at("task") == (segment ? "segment" : "detect"));
  CHECK(facts.at("class") == (segment ? "SegmentationModel" : "DetectionModel"));
  CHECK(facts.at("names").get<std::vector<std::string>>() == made.names);
  CHECK(facts.at("nc") == static_cast<int>(made.names.size()));
  CHECK(facts.at("sppf_act") == json::array({"SiLU"}));  // the released YOLO11's SPPF
  CHECK(facts.at("stored_dtype") == expected_dtype);    // the precision the weights have in the checkpoint
  CHECK(facts.at("ema") == true);
  CHECK(facts.at("optimizer") == true);
  CHECK(facts.at("epoch") == -1);
  CHECK(facts.at("imgsz") == 96);
  CHECK(facts.at("version") == "8.4.56");
  CHECK(facts.at("train_task") == (segment ? "segment" : "detect"));

  // The same outputs as yoloflow's model from the same checkpoint, on the same input.
  const auto theirs = test::read_tensor_dict(dir + "/outputs.pt");
  const auto [output0, proto] = yoloflow_outputs(made.path, theirs.at("input"));
  const auto& ref = theirs.at("output0");
  REQUIRE(output0.sizes() == ref.sizes());
  const auto nc = static_cast<std::int64_t>(made.names.size());
  const double box_err = (output0.slice(1, 0, 4) - ref.slice(1, 0, 4)).abs().max().item<double>();
  const double score_err = (output0.slice(1, 4, 4 + nc) - ref.slice(1, 4, 4 + nc)).abs().max().item<double>();
  MESSAGE(made.architecture << " exported to Ultralytics: max |error| box " << box_err << " px, score " << score_err);
  CHECK(box_err < 1e-3);
  CHECK(score_err < 1e-5);
  // Not a comparison of constants: boxes and scores vary across anchors (this detection fixture,
  // two epochs from scratch, scores low on every class; the error is relative to nothing).
  CHECK(ref.slice(1, 0, 4).std().item<double>() > 1.0);
  CHECK(ref.slice(1, 4, 4 + nc).std().item<double>() > 0);
  CHECK(score_err <= 1e-3 * ref.slice(1, 4, 4 + nc).max().item<double>());
  if (segment) {
    const double coef_err = (output0.slice(1, 4 + nc) - ref.slice(1, 4 + nc)).abs().max().item<double>();
    const double proto_err = (proto - theirs.at("proto")).abs().max().item<double>();
    MESSAGE("  mask coefficient " << coef_err << ", prototype " << proto_err);
    CHECK(coef_err < 1e-5);
    CHECK(proto_err < 1e-5);
    CHECK(ref.slice(1, 4 + nc).std().item<double>() > 0.005);
  }

  // And back: yoloflow reads what it wrote as an Ultralytics checkpoint.
  const auto back = test::run_cli("weights import " + out + " --out " + dir + "/back.pt");
  INFO(back.output);
  CHECK(back.exit_code == 0);
  CHECK(back.output.find(made.architecture) != std::string::npos);
}

}  // namespace

TEST_CASE("weights export --format ultralytics: a detection last.pt and a segmentation best.pt load in "
          "Ultralytics 8.4.56 and give yoloflow's outputs") {
  REQUIRE_MESSAGE(fs::exists(anchors()), anchors() << " is missing");
  const std::string dir = test::temp_dir("weights-ultralytics-export");
  SUBCASE("detection, last.pt: the EMA weights, float32") {
    fs::create_directories(dir + "/det");
    const std::string fixtures = test::fixtures_dir() + "/ultralytics-checkpoints/";
    const Made made = make_checkpoint(fixtures + "yolo11n-coco80-best.pt", dir + "/det/last.pt", false, 96);
    check_round_trip(made, dir + "/det", fixtures + "yolo11n-coco80-input.pt", false, "torch.float32");
  }
  SUBCASE("a model yaml's edited scales: Ultralytics' yaml with that row") {
    fs::create_directories(dir + "/scales");
    const Made made = make_edited_scales_checkpoint("yolo11n[0.5,0.1875,1024]", dir + "/scales/last.pt");
    check_round_trip(made, dir + "/scales", test::fixtures_dir() + "/ultralytics-checkpoints/yolo11n-coco80-input.pt",
                     false, "torch.float32");
  }
  SUBCASE("segmentation, best.pt: its float16 EMA") {
    fs::create_directories(dir + "/seg");
    const std::string fixtures =
        std::string(YOLOFLOW_SOURCE_DIR) + "/tests/fixtures/ultralytics-8.4.56-yolo11n-seg-";
    const Made made = make_checkpoint(fixtures + "best.pt", dir + "/seg/best.pt", true, 96);
    check_round_trip(made, dir + "/seg", fixtures + "ref.pt", true, "torch.float16");
  }
  test::remove_tree(dir);
}

TEST_CASE("weights export --format ultralytics: without Ultralytics, or without Python, one line saying what to install") {
  const std::string dir = test::temp_dir("weights-ultralytics-missing");
  const std::string src = std::string(YOLOFLOW_SOURCE_DIR) + "/tests/fixtures/ultralytics-8.4.56-yolo11n-seg-best.pt";
  const Made made = make_checkpoint(src, dir + "/best.pt", true, 64);
  auto check_one_line = [](const test::CliResult& r) {
    INFO(r.output);
    CHECK(r.exit_code == kExitInvalid);
    CHECK(r.output.find("pip install ultralytics") != std::string::npos);
    std::size_t lines = 0;
    for (char c : r.output) lines += c == '\n';
    CHECK(lines == 1);
    CHECK(r.output.rfind("error: ", 0) == 0);
  };
  // The machine's Python has torch, not Ultralytics (where it has, this part says so and is left out).
  if (test::run_shell("PYTHONPATH= " + test::python() + " -c 'import ultralytics'").exit_code == 0) {
    MESSAGE(test::python() << " has Ultralytics installed: the missing-Ultralytics case is not tested here");
  } else {
    const auto r = test::run_cli("weights export --format ultralytics " + made.path + " --out " + dir + "/model.pt",
                                 "PYTHONPATH= YOLOFLOW_PYTHON=" + test::python() + " ");
    check_one_line(r);
    CHECK(r.output.find("Ultralytics is not installed") != std::string::npos);
    CHECK_FALSE(fs::exists(dir + "/model.pt"));
  }
  const auto r = test::run_cli("weights export --format ultralytics " + made.path + " --out " + dir + "/model.pt",
                               "YOLOFLOW_PYTHON=" + dir + "/no-such-python ");
  check_one_line(r);
  CHECK(r.output.find("YOLOFLOW_PYTHON") != std::string::npos);
  // An output Ultralytics would not load is refused before anything runs.
  const auto named = test::run_cli("weights export --format ultralytics " + made.path + " --out " + dir + "/model.bin");
  INFO(named.output);
  CHECK(named.exit_code == kExitInvalid);
  CHECK(named.output.find("*.pt") != std::string::npos);
  test::remove_tree(dir);
}
