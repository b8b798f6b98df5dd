// YOLO11-seg (the yolo11 plugin at task segment): the architecture as Ultralytics 8.4.56 builds
// it for every scale (state-dict names and shapes, parameter counts) and its eval outputs on the
// same weights and input (tests/fixtures/ultralytics-8.4.56-seg-model.*, made by
// tests/fixtures/make-ultralytics-seg-model.py with Ultralytics' own SegmentationModel), the head
// it reports, its architecture names, and what it refuses; Ultralytics' own -seg checkpoints
// (tests/fixtures/ultralytics-8.4.56-yolo11n-seg-*.pt, made by make-ultralytics-seg-checkpoint.py
// with its trainer's format and its strip_optimizer) read by the safe reader, giving its outputs,
// validated and fine-tuned from with the segmentation task's components.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "runtime/pipeline/architecture_name.h"
#include "runtime/plugin/plugin_manager.h"
#include "support/paths.h"
#include "support/plugins.h"
#include "support/run_cli.h"
#include "support/tensor_fixture.h"
#include "training/checkpoint/checkpoint_model.h"
#include "training/model/model_factory.h"
#include "training/model/torch_file.h"
#include "training/model/ultralytics_checkpoint.h"
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
  static const std::map<std::string, torch::Tensor> outputs = test::read_tensor_dict(fixture("pt"));
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
  // The scale's own multiples (0), so that yolo11m-seg after a model yaml's edited scales is the stock one.
  CHECK(core::architecture_params(*seg) == nlohmann::json{{"scale", "m"},
                                                          {"task", "segment"},
                                                          {"depth_multiple", 0.0},
                                                          {"width_multiple", 0.0},
                                                          {"max_channels", 0}});
  // A model yaml's scales row after the name: its multiples.
  auto own = core::parse_architecture(registry, "yolo11s-seg[0.75,0.375,768]");
  REQUIRE(own);
  CHECK(own->scale == "s");
  CHECK(own->task == "segment");
  CHECK(core::architecture_params(*own) == nlohmann::json{{"scale", "s"},
                                                          {"task", "segment"},
                                                          {"depth_multiple", 0.75},
                                                          {"width_multiple", 0.375},
                                                          {"max_channels", 768}});
  CHECK(core::create_model(registry, "yolo11s-seg[0.75,0.375,768]", 80)->architecture() == "yolo11s-seg[0.75,0.375,768]");
  for (const char* bad : {"yolo11s[0.75,0.375]", "yolo11s[0.75,-1,768]", "yolo11s[0.75,0.375,76.5]", "yolo11[0.5,0.5,64]"}) {
    CAPTURE(bad);
    CHECK_FALSE(core::parse_architecture(registry, bad));
  }
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

namespace {

std::string seg_checkpoint(const std::string& part) {
  return std::string(YOLOFLOW_SOURCE_DIR) + "/tests/fixtures/ultralytics-8.4.56-yolo11n-seg-" + part + ".pt";
}

}  // namespace

TEST_CASE("an Ultralytics yolo11n-seg best.pt is read by the safe reader and gives Ultralytics' outputs") {
  core::TorchFile file = core::TorchFile::open(seg_checkpoint("best"));
  const core::UltralyticsCheckpoint u = core::read_ultralytics_checkpoint(file);
  CHECK(u.model_class == "ultralytics.nn.tasks.SegmentationModel");
  CHECK(u.task == "segment");
  CHECK(u.architecture() == "yolo11n-seg");
  CHECK(u.model_spec().at("params").at("task") == "segment");
  CHECK(u.nc == 80);
  REQUIRE(u.names.size() == 80);
  CHECK(u.names[0] == "person");
  CHECK(u.names[79] == "toothbrush");
  CHECK(u.weights_entry == "model");
  CHECK(u.epoch == -1);
  CHECK(u.train_args.at("task") == "segment");

  auto loaded = core::load_checkpoint_model(plugins().registry(), seg_checkpoint("best"), torch::kCPU, "--weights", "",
                                            "--model");
  CHECK(loaded.model->architecture() == "yolo11n-seg");
  CHECK(loaded.weights_kind == "Ultralytics");
  // Every tensor of the file is one of the model's, and the reverse.
  CHECK(core::module_state(loaded.model->module()).size() == u.weights.size());

  const auto ref = test::read_tensor_dict(seg_checkpoint("ref"));
  torch::NoGradGuard no_grad;
  loaded.model->module().eval();  // fp32 parameters holding the file's fp16 values
  const auto d = loaded.model->decode(loaded.model->forward_train(ref.at("input")));
  const auto b = d.boxes[0];
  const auto xywh = torch::stack({(b.select(1, 0) + b.select(1, 2)) / 2, (b.select(1, 1) + b.select(1, 3)) / 2,
                                  b.select(1, 2) - b.select(1, 0), b.select(1, 3) - b.select(1, 1)},
                                 0);
  const auto output0 = torch::cat({xywh, d.scores[0].t(), d.extras.at("mask_coefficients")[0].t()}, 0).unsqueeze(0);
  const auto& ref0 = ref.at("output0");
  REQUIRE(output0.sizes() == ref0.sizes());
  REQUIRE(d.extras.at("prototypes").sizes() == ref.at("proto").sizes());
  const double box_err = (output0.slice(1, 0, 4) - ref0.slice(1, 0, 4)).abs().max().item<double>();
  const double rest_err = (output0.slice(1, 4) - ref0.slice(1, 4)).abs().max().item<double>();
  const double proto_err = (d.extras.at("prototypes") - ref.at("proto")).abs().max().item<double>();
  MESSAGE("Ultralytics yolo11n-seg best.pt: max |error| box " << box_err << " px, scores and coefficients " << rest_err
                                                              << ", prototypes " << proto_err);
  CHECK(box_err < 1e-3);
  CHECK(rest_err < 1e-4);
  CHECK(proto_err < 1e-5);
  CHECK(ref0.slice(1, 84).std().item<double>() > 0.01);  // coefficients that vary (sparse weights: small)
}

TEST_CASE("an Ultralytics yolo11n-seg best.pt: info names it; val scores its masks; train model=best.pt fine-tunes it as a segmentation model") {
  const auto dir = test::temp_dir("ultralytics-seg-pt");
  auto r = test::run_cli("info --weights " + seg_checkpoint("best"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("yolo11n-seg") != std::string::npos);

  // Validated with the segmentation evaluator and masks, which the file does not record.
  const std::string data = test::shared_dir() + "/datasets/coco128-seg/data.yaml";
  // save_json: each detection's mask in COCO RLE at its image's size.
  r = test::run_cli("val model=" + seg_checkpoint("best") + " data=" + data + " imgsz=64 max_det=2 save_json project=" +
                        dir + " name=val",
                    "OMP_NUM_THREADS=1 ");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("Mask(P") != std::string::npos);
  // Ultralytics' plots of a segmentation validation: the box curves and the mask curves.
  for (const char* f : {"BoxPR_curve.png", "MaskPR_curve.png", "MaskF1_curve.png", "MaskP_curve.png", "MaskR_curve.png",
                        "val_batch0_pred.jpg"}) {
    CAPTURE(f);
    CHECK(std::filesystem::exists(dir + "/val/" + f));
  }
  {
    std::ifstream in(dir + "/val/predictions.json");
    const auto results = nlohmann::json::parse(in);
    REQUIRE(results.size() > 100);
    for (const auto& d : results) {
      REQUIRE(d.contains("segmentation"));
      CHECK(d["segmentation"]["size"].size() == 2);
      CHECK(d["segmentation"]["size"][0].get<int>() > 0);
      CHECK(!d["segmentation"]["counts"].get<std::string>().empty());
    }
  }

  // Fine-tuned on coco128-seg: the task's loss, evaluator and masks come with the file's model.
  r = test::run_cli("train model=" + seg_checkpoint("best") + " data=" + data + " --run-dir " + dir +
                        "/run imgsz=64 epochs=1 fraction=0.03125 workers=1 batch=4 val=False",
                    "OMP_NUM_THREADS=1 ");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("(an Ultralytics 8.4.56 checkpoint, its model)") != std::string::npos);
  std::ifstream in(dir + "/run/pipeline.json");
  const auto pipeline = nlohmann::json::parse(in);
  const auto& train = pipeline["stages"]["train"]["params"];
  CHECK(train["model"]["params"]["task"] == "segment");
  CHECK(train["loss"]["plugin"] == "yolo11_segmentation");
  CHECK(train["evaluator"]["plugin"] == "segmentation");
  CHECK(pipeline["stages"]["batch"]["params"]["masks"] == true);
  test::remove_tree(dir);
}

TEST_CASE("predict with a yolo11n-seg checkpoint: filled masks drawn, outlines in predictions.json, polygons in label files") {
  const auto dir = test::temp_dir("seg-predict");
  const std::string image = test::shared_dir() + "/datasets/coco128-seg/images/train2017/000000000009.jpg";
  const cv::Mat original = cv::imread(image);
  REQUIRE(!original.empty());
  for (const bool retina : {false, true}) {
    CAPTURE(retina);
    const std::string out = dir + (retina ? "/retina" : "/plain");
    // The fixture's weights are not trained: a low threshold keeps a few detections to check.
    const auto r = test::run_cli("predict model=" + seg_checkpoint("best") + " source=" + image +
                                 " conf=0.001 max_det=5 imgsz=320 save_txt show_labels=False" +
                                 (retina ? " retina_masks" : "") + " --out " + out);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    std::ifstream in(out + "/predictions.json");
    const auto json = nlohmann::json::parse(in);
    REQUIRE(json.size() == 1);
    const auto& dets = json[0]["detections"];
    REQUIRE(dets.size() >= 1);
    for (const auto& d : dets) {
      REQUIRE(d.contains("outlines"));
      REQUIRE(d["outlines"].size() >= 1);
      for (const auto& part : d["outlines"]) {
        CHECK(part.size() >= 1);
        for (const auto& q : part) {
          CHECK(q[0].get<double>() >= 0);
          CHECK(q[0].get<double>() <= original.cols);
          CHECK(q[1].get<double>() >= 0);
          CHECK(q[1].get<double>() <= original.rows);
        }
      }
    }
    // Label files: one line per detection, class then x y pairs normalised to the image.
    std::ifstream labels(out + "/labels/000000000009.txt");
    std::size_t lines = 0;
    for (std::string line; std::getline(labels, line);) {
      std::istringstream words(line);
      std::vector<double> v;
      for (double x; words >> x;) v.push_back(x);
      CHECK(v.size() % 2 == 1);
      CHECK(v.size() >= 3);
      for (std::size_t k = 1; k < v.size(); ++k) CHECK((v[k] >= 0 && v[k] <= 1));
      ++lines;
    }
    CHECK(lines == dets.size());
    // The annotated image is the original blended with the mask colours inside the outlines
    // (boxes drawn without tags), unchanged far outside them.
    const cv::Mat drawn = cv::imread(out + "/000000000009.jpg");
    REQUIRE(drawn.size() == original.size());
    cv::Mat inside(original.size(), CV_8U, cv::Scalar(0));
    std::vector<std::vector<cv::Point>> parts;
    for (const auto& part : dets[0]["outlines"]) {
      std::vector<cv::Point> points;
      for (const auto& q : part) points.emplace_back(static_cast<int>(q[0].get<double>()), static_cast<int>(q[1].get<double>()));
      parts.push_back(points);
    }
    cv::fillPoly(inside, parts, cv::Scalar(255));
    cv::erode(inside, inside, cv::Mat(), cv::Point(-1, -1), 8);  // away from edges and box lines
    cv::Mat diff;
    cv::absdiff(drawn, original, diff);
    cv::Mat grey;
    cv::cvtColor(diff, grey, cv::COLOR_BGR2GRAY);
    REQUIRE(cv::countNonZero(inside) > 100);
    CHECK(cv::mean(grey, inside)[0] > 20);  // blended: well beyond JPEG noise
  }
  test::remove_tree(dir);
}
