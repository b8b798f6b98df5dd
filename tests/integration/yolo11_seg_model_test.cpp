// YOLO11-seg (the yolo11 plugin at task segment): the architecture as Ultralytics 8.4.56 builds
// it for every scale (state-dict names and shapes, parameter counts) and its eval outputs on the
// same weights and input (tests/fixtures/ultralytics-8.4.56-seg-model.*, made by
// tests/fixtures/make-ultralytics-seg-model.py with Ultralytics' own SegmentationModel), the head
// it reports, its architecture names, and what it refuses.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/pipeline/architecture_name.h"
#include "runtime/plugin/plugin_manager.h"
#include "support/paths.h"
#include "support/plugins.h"
#include "support/run_cli.h"
#include "training/model/model_factory.h"
#include "training/model/weights_io.h"
#include "yoloflow/error.h"
#include "support/doctest_checks.h"  // last: CHECK is doctest's after LibTorch's headers

using namespace yoloflow;

namespace {

core::PluginManager& plugins() { return test::plugins_with("yolo11"); }

std::string fixture(const std::string& name) {
  return std::string(YOLOFLOW_SOURCE_DIR) + "/tests/fixtures/ultralytics-8.4.56-seg-model." + name;
}

const nlohmann::json& fixture_meta() {
  static const nlohmann::json meta = [] {
    std::ifstream in(fixture("json"));
    REQUIRE(in.good());
    return nlohmann::json::parse(in);
  }();
  return meta;
}

const std::map<std::string, torch::Tensor>& fixture_outputs() {
  static const std::map<std::string, torch::Tensor> outputs = [] {
    std::ifstream in(fixture("pt"), std::ios::binary);
    REQUIRE(in.good());
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::map<std::string, torch::Tensor> out;
    for (const auto& item : torch::pickle_load(bytes).toGenericDict()) {
      out[item.key().toStringRef()] = item.value().toTensor();
    }
    return out;
  }();
  return outputs;
}

// The fixture's weights, set by its formula (make-ultralytics-seg-model.py says it in full):
// every state entry in name order but the batch counters and the fixed DFL integral.
void fill_like_fixture(torch::nn::Module& module) {
  auto state = core::module_state(module);
  std::sort(state.begin(), state.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  auto ends = [](const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  torch::NoGradGuard no_grad;
  std::int64_t t = 0;
  for (auto& [name, x] : state) {
    if (ends(name, "num_batches_tracked") || ends(name, ".dfl.conv.weight")) continue;
    const auto u = torch::sin(torch::arange(x.numel(), torch::kDouble) * 0.7548776662466927 +
                              static_cast<double>(t++) * 0.5698402909980532);
    torch::Tensor v;
    if (ends(name, "running_var")) {
      v = 1 + 0.25 * u;
    } else if (ends(name, "running_mean") || ends(name, ".bias")) {
      v = 0.1 * u;
    } else if (x.dim() == 1) {
      v = 1 + 0.2 * u;
    } else {
      v = u * std::sqrt(3.0 / (static_cast<double>(x.numel()) / static_cast<double>(x.size(0))));
    }
    x.copy_(v.reshape(x.sizes()).to(x.dtype()));
  }
}

torch::Tensor fixture_input() {
  const auto k = torch::arange(3 * 96 * 64, torch::kDouble);
  return (0.5 + 0.5 * torch::sin(k * 0.1234567 + 0.3)).reshape({1, 3, 96, 64}).to(torch::kFloat);
}

std::int64_t count_params(Model& m) {
  std::int64_t n = 0;
  for (const auto& p : m.module().parameters()) n += p.numel();
  return n;
}

}  // namespace

TEST_CASE("yolo11-seg, every scale: Ultralytics' state dict, parameter counts and eval outputs on the same weights") {
  const auto& meta = fixture_meta();
  REQUIRE(meta.at("ultralytics") == "8.4.56");
  for (const std::string scale : {"n", "s", "m", "l", "x"}) {
    CAPTURE(scale);
    const auto& s = meta.at("scales").at(scale);
    const int nc = s.at("nc").get<int>();
    auto m = core::create_model(plugins().registry(), "yolo11" + scale + "-seg", nc);
    CHECK(m->architecture() == "yolo11" + scale + "-seg");
    // Names and shapes, entry for entry.
    std::map<std::string, std::vector<std::int64_t>> ours, theirs;
    for (const auto& [name, t] : core::module_state(m->module())) ours[name] = t.sizes().vec();
    for (const auto& e : s.at("state_dict")) theirs[e.at(0).get<std::string>()] = e.at(1).get<std::vector<std::int64_t>>();
    CHECK(ours.size() == theirs.size());
    for (const auto& [name, shape] : theirs) {
      CAPTURE(name);
      REQUIRE(ours.count(name) == 1);
      CHECK(ours.at(name) == shape);
    }
    CHECK(count_params(*m) == s.at("parameters").get<std::int64_t>());
    const auto layers = m->layers();
    const auto layer_params = s.at("layer_params").get<std::vector<std::int64_t>>();
    REQUIRE(layers.size() == layer_params.size());
    for (std::size_t i = 0; i < layers.size(); ++i) CHECK(layers[i].params == layer_params[i]);

    // The same weights and input: output0 (1, 4 + nc + 32, anchors): box centre, size in
    // pixels, class probabilities, mask coefficients; proto (1, 32, H/4, W/4).
    fill_like_fixture(m->module());
    m->module().eval();
    torch::NoGradGuard no_grad;
    const auto d = m->decode(m->forward_train(fixture_input()));
    const auto b = d.boxes[0];
    const auto xywh = torch::stack({(b.select(1, 0) + b.select(1, 2)) / 2, (b.select(1, 1) + b.select(1, 3)) / 2,
                                    b.select(1, 2) - b.select(1, 0), b.select(1, 3) - b.select(1, 1)},
                                   0);
    const auto output0 = torch::cat({xywh, d.scores[0].t(), d.extras.at("mask_coefficients")[0].t()}, 0).unsqueeze(0);
    const auto& ref0 = fixture_outputs().at(scale + ".output0");
    const auto& ref_proto = fixture_outputs().at(scale + ".proto");
    REQUIRE(output0.sizes() == ref0.sizes());
    REQUIRE(d.extras.at("prototypes").sizes() == ref_proto.sizes());
    const double box_err = (output0.slice(1, 0, 4) - ref0.slice(1, 0, 4)).abs().max().item<double>();
    const double score_err = (output0.slice(1, 4, 4 + nc) - ref0.slice(1, 4, 4 + nc)).abs().max().item<double>();
    const double coef_err = (output0.slice(1, 4 + nc) - ref0.slice(1, 4 + nc)).abs().max().item<double>();
    const double proto_err = (d.extras.at("prototypes") - ref_proto).abs().max().item<double>();
    // Exactly equal where both run the same LibTorch (the fixture was made with Debian's torch
    // 1.13 on the CPU); float tolerance elsewhere.
    MESSAGE("yolo11" << scale << "-seg against Ultralytics: max |error| box " << box_err << " px, score " << score_err
                     << ", mask coefficient " << coef_err << ", prototype " << proto_err);
    CHECK(box_err < 1e-3);
    CHECK(score_err < 1e-5);
    CHECK(coef_err < 1e-5);
    CHECK(proto_err < 1e-5);
    // Not a comparison of constants: the outputs vary across anchors and prototype pixels.
    CHECK(ref0.slice(1, 4 + nc).std().item<double>() > 0.05);
    CHECK(ref_proto.std().item<double>() > 0.05);
  }
}

TEST_CASE("yolo11-seg parameter counts at nc 80 are those of Ultralytics' yolo11-seg.yaml, every scale") {
  const std::pair<const char*, std::int64_t> expected[] = {{"yolo11n-seg", 2876848},
                                                           {"yolo11s-seg", 10113248},
                                                           {"yolo11m-seg", 22420896},
                                                           {"yolo11l-seg", 27678368},
                                                           {"yolo11x-seg", 62142656}};
  for (const auto& [arch, n] : expected) {
    CAPTURE(arch);
    CHECK(count_params(*core::create_model(plugins().registry(), arch, 80)) == n);
  }
}

TEST_CASE("yolo11n-seg reports a segment head with mask coefficients per anchor and prototypes per image") {
  auto m = core::create_model(plugins().registry(), "yolo11n-seg", 5);
  const HeadDescription head = m->head();
  CHECK(head.task == "segment");
  CHECK(head.nc == 5);
  REQUIRE(head.outputs.size() == 2);
  REQUIRE(head.output("mask_coefficients") != nullptr);
  CHECK(head.output("mask_coefficients")->per_anchor);
  CHECK(head.output("mask_coefficients")->channels == 32);
  REQUIRE(head.output("prototypes") != nullptr);
  CHECK_FALSE(head.output("prototypes")->per_anchor);

  m->module().train();
  const auto out = m->forward_train(torch::rand({2, 3, 320, 256}));
  REQUIRE(out.levels.size() == 3);
  CHECK(out.levels[0].sizes() == torch::IntArrayRef({2, 64 + 5, 40, 32}));
  const std::int64_t anchors = 40 * 32 + 20 * 16 + 10 * 8;
  CHECK(out.extra("mask_coefficients").sizes() == torch::IntArrayRef({2, 32, anchors}));
  CHECK(out.extra("prototypes").sizes() == torch::IntArrayRef({2, 32, 80, 64}));
  // Both outputs train: gradients reach the mask branch and the prototype branch.
  (out.extra("mask_coefficients").sum() + out.extra("prototypes").sum()).backward();
  const auto params = m->module().named_parameters();
  CHECK(params["model.23.cv4.2.2.weight"].grad().abs().sum().item<double>() > 0);
  CHECK(params["model.23.proto.upsample.weight"].grad().abs().sum().item<double>() > 0);

  // The layer table ends in Ultralytics' Segment row: nc, masks, prototype channels, inputs.
  const auto rows = m->layers();
  REQUIRE(rows.size() == 24);
  CHECK(rows[23].module == "Segment");
  CHECK(rows[23].from == "[16, 19, 22]");
  CHECK(rows[23].args == "[5, 32, 64, [64, 128, 256]]");

  // A detector of the same scale has neither output, and its architecture name no suffix.
  auto det = core::create_model(plugins().registry(), "yolo11n", 5);
  CHECK(det->head().task == "detect");
  CHECK(det->head().outputs.empty());
  CHECK(det->forward_train(torch::rand({1, 3, 64, 64})).extras.empty());
}

TEST_CASE("architecture names: a scale letter and Ultralytics' task suffix, read one way everywhere") {
  const auto& registry = plugins().registry();
  auto seg = core::parse_architecture(registry, "yolo11m-seg");
  REQUIRE(seg);
  CHECK(seg->plugin == "yolo11");
  CHECK(seg->scale == "m");
  CHECK(seg->task == "segment");
  CHECK(core::architecture_params(*seg) == nlohmann::json{{"scale", "m"}, {"task", "segment"}});
  // No suffix: the plugin's default task, so that yolo11s after a -seg model is a detector.
  auto det = core::parse_architecture(registry, "yolo11s");
  REQUIRE(det);
  CHECK(det->task == "detect");
  auto plain = core::parse_architecture(registry, "yolo11");
  REQUIRE(plain);
  CHECK(plain->scale.empty());
  // A task the plugin does not list, a scale it does not have, an unknown plugin.
  CHECK_FALSE(core::parse_architecture(registry, "yolo11n-pose"));
  CHECK_FALSE(core::parse_architecture(registry, "yolo11q-seg"));
  CHECK_FALSE(core::parse_architecture(registry, "yolo8n-seg"));
  try {
    core::create_model(registry, "yolo11n-pose", 80);
    FAIL("expected a refusal");
  } catch (const InvalidInput& e) {
    const std::string what = e.what();
    CHECK(what.find("unknown model 'yolo11n-pose'") != std::string::npos);
    CHECK(what.find("yolo11x-seg") != std::string::npos);
  }
}

TEST_CASE("yolo11-seg refuses ONNX export in one line instead of writing a detector's graph") {
  auto m = core::create_model(plugins().registry(), "yolo11n-seg", 3);
  const std::string dir = test::temp_dir("seg-export");
  core::write_weights(dir + "/seg.pt", core::module_state(m->module()));
  const auto r = test::run_cli("export --weights " + dir + "/seg.pt --model yolo11n-seg --imgsz 64 --out " + dir + "/seg.onnx");
  CAPTURE(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("ONNX export writes detection models only") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/seg.onnx"));
}
