// `yoloflow export` of a YOLO11-seg model, checked as a user would: the file has Ultralytics'
// two outputs (output0 (B, 4 + nc + 32, anchors), output1 (B, 32, H/4, W/4)) and metadata
// task segment; OpenCV's dnn (an independent runtime) and the LibTorch evaluator of the ONNX
// operators compute the model's own outputs from it, float32, --dynamic, --half and --int8;
// `yoloflow val` and `predict` run the exported file and give the model's box and mask
// figures. The weights: yolo11n-seg with the coco128 fixture's trained detector in it (so boxes
// are found) and the mask branch as initialised; 16 coco128-seg images at 320.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include <nlohmann/json.hpp>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <opencv2/dnn.hpp>

#include "support/onnx_file.h"
#include "support/paths.h"
#include "support/plugins.h"
#include "support/run_cli.h"
#include "training/export/onnx_torch_evaluator.h"
#include "training/model/model_factory.h"
#include "training/model/weights_io.h"

using namespace yoloflow;
using json = nlohmann::json;

namespace {

using test::meta;
using test::read_model;

std::unique_ptr<Model> seg_model() {
  auto m = core::create_model(test::plugins_with("yolo11").registry(), "yolo11n-seg", 80);
  // The trained detector's tensors where the names and shapes agree (all but the mask branch).
  const auto detector = core::read_weights(test::fixtures_dir() + "/coco128-val-parity/coco128-yolo11n.pt");
  std::map<std::string, torch::Tensor> by_name(detector.begin(), detector.end());
  torch::NoGradGuard no_grad;
  std::size_t copied = 0, detector_params = 0;
  for (auto& item : m->module().named_parameters()) {
    const bool mask_branch = item.key().rfind("model.23.cv4.", 0) == 0 || item.key().rfind("model.23.proto.", 0) == 0;
    detector_params += mask_branch ? 0 : 1;
    const auto it = by_name.find(item.key());
    if (it != by_name.end() && it->second.sizes() == item.value().sizes()) {
      item.value().copy_(it->second);
      ++copied;
    }
  }
  for (auto& item : m->module().named_buffers()) {
    const auto it = by_name.find(item.key());
    if (it != by_name.end() && it->second.sizes() == item.value().sizes()) item.value().copy_(it->second);
  }
  REQUIRE(copied == detector_params);
  m->module().eval();
  return m;
}

// The model of the weights file every export here was made from.
std::unique_ptr<Model> saved_model(const std::string& weights) {
  auto m = core::create_model(test::plugins_with("yolo11").registry(), "yolo11n-seg", 80);
  core::load_weights(m->module(), core::read_weights(weights), weights);
  m->module().eval();
  return m;
}

// The weights file, its exports and a 16-image coco128-seg subset, made once.
struct Files {
  std::string dir, weights, data, fp32, dynamic, fp16, int8, int8_log;
};

std::string export_cli(const std::string& weights, const std::string& out, const std::string& extra) {
  const auto r = test::run_cli("export --weights " + weights + " --model yolo11n-seg --imgsz 320 --out " + out + " " + extra);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return r.output;
}

const Files& files() {
  static const Files f = [] {
    Files f;
    f.dir = test::temp_dir("export-seg");
    f.weights = f.dir + "/seg.pt";
    core::write_weights(f.weights, core::module_state(seg_model()->module()));
    const std::string images = test::shared_dir() + "/datasets/coco128-seg/images/train2017";
    std::vector<std::string> listed;
    for (const auto& e : std::filesystem::directory_iterator(images)) listed.push_back(e.path().string());
    std::sort(listed.begin(), listed.end());
    std::ofstream list(f.dir + "/subset.txt");
    for (std::size_t i = 0; i < 16; ++i) list << listed[i] << "\n";
    list.close();
    std::string yaml = test::read_file(test::shared_dir() + "/datasets/coco128-seg/data.yaml");
    yaml = yaml.substr(yaml.find("names:"));
    test::write_file(f.dir + "/data.yaml", "path: " + f.dir + "\ntrain: subset.txt\nval: subset.txt\n" + yaml);
    f.data = f.dir + "/data.yaml";
    f.fp32 = f.dir + "/fp32.onnx";
    f.dynamic = f.dir + "/dynamic.onnx";
    f.fp16 = f.dir + "/fp16.onnx";
    f.int8 = f.dir + "/int8.onnx";
    export_cli(f.weights, f.fp32, "");
    export_cli(f.weights, f.dynamic, "--dynamic");
    export_cli(f.weights, f.fp16, "--half");
    f.int8_log = export_cli(f.weights, f.int8, "--int8 --data " + f.data + " --fraction 0.5");
    return f;
  }();
  return f;
}

std::vector<std::string> dims(const onnx::ValueInfoProto& v) {
  std::vector<std::string> out;
  for (const auto& d : v.type().tensor_type().shape().dim()) {
    out.push_back(d.has_dim_param() ? d.dim_param() : std::to_string(d.dim_value()));
  }
  return out;
}

// The model's outputs in the file's layout: output0 (B, 4 + nc + 32, A) [cx, cy, w, h,
// probabilities, coefficients], output1 the prototypes.
std::pair<torch::Tensor, torch::Tensor> model_outputs(Model& m, const torch::Tensor& images) {
  torch::NoGradGuard no_grad;
  const auto d = m.decode(m.forward_train(images));
  const auto& b = d.boxes;
  const auto xywh = torch::stack({(b.select(2, 0) + b.select(2, 2)) / 2, (b.select(2, 1) + b.select(2, 3)) / 2,
                                  b.select(2, 2) - b.select(2, 0), b.select(2, 3) - b.select(2, 1)},
                                 1);
  return {torch::cat({xywh, d.scores.transpose(1, 2), d.extras.at("mask_coefficients").transpose(1, 2)}, 1),
          d.extras.at("prototypes")};
}

std::vector<torch::Tensor> run_opencv(const std::string& path, const torch::Tensor& images) {
  auto net = cv::dnn::readNetFromONNX(path);
  net.enableFusion(false);
  const auto x = images.contiguous();
  const std::vector<int> shape(x.sizes().begin(), x.sizes().end());
  cv::Mat blob(static_cast<int>(shape.size()), shape.data(), CV_32F, x.data_ptr<float>());
  net.setInput(blob.clone(), "images");
  std::vector<cv::Mat> outs;
  net.forward(outs, std::vector<std::string>{"output0", "output1"});
  std::vector<torch::Tensor> result;
  for (const auto& o : outs) {
    std::vector<std::int64_t> s;
    for (int i = 0; i < o.dims; ++i) s.push_back(o.size[i]);
    result.push_back(torch::from_blob(const_cast<float*>(o.ptr<float>()), s, torch::kFloat).clone());
  }
  return result;
}

// Largest differences of the file's outputs from the model's: boxes (pixels), probabilities,
// coefficients, prototypes.
struct Errors {
  double box = 0, prob = 0, coef = 0, proto = 0;
};
Errors errors(const std::vector<torch::Tensor>& file, const std::pair<torch::Tensor, torch::Tensor>& model) {
  REQUIRE(file.size() == 2);
  REQUIRE(file[0].sizes() == model.first.sizes());
  REQUIRE(file[1].sizes() == model.second.sizes());
  auto diff = [](const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<double>(); };
  return {diff(file[0].slice(1, 0, 4), model.first.slice(1, 0, 4)), diff(file[0].slice(1, 4, 84), model.first.slice(1, 4, 84)),
          diff(file[0].slice(1, 84), model.first.slice(1, 84)), diff(file[1], model.second)};
}

// A float32 file computes what the model computes, to float32 rounding.
void check_float32(const Errors& e, const std::string& runtime) {
  MESSAGE(runtime << ": max |box| " << e.box << " px, |prob| " << e.prob << ", |coef| " << e.coef << ", |proto| " << e.proto);
  CHECK(e.box < 1e-2);
  CHECK(e.prob < 1e-4);
  CHECK(e.coef < 1e-3);
  CHECK(e.proto < 1e-3);
}

json metrics(const std::string& folder) { return json::parse(test::read_file(folder + "/metrics.json")); }

}  // namespace

TEST_CASE("export seg: Ultralytics' two outputs and task segment; OpenCV dnn and the ONNX evaluator give the model's outputs") {
  const auto& f = files();
  auto m = read_model(f.fp32);
  CHECK_NOTHROW(onnx::checker::check_model(m));
  REQUIRE(m.graph().output_size() == 2);
  CHECK(m.graph().output(0).name() == "output0");
  CHECK(m.graph().output(1).name() == "output1");
  CHECK(dims(m.graph().output(0)) == std::vector<std::string>{"1", "116", "2100"});
  CHECK(dims(m.graph().output(1)) == std::vector<std::string>{"1", "32", "80", "80"});
  CHECK(meta(m, "task") == "segment");
  int transposed = 0;
  for (const auto& n : m.graph().node()) transposed += n.op_type() == "ConvTranspose";
  CHECK(transposed == 1);  // the prototypes' 2x upsampling, as Ultralytics' Proto

  torch::manual_seed(3);
  const auto images = torch::rand({1, 3, 320, 320});
  auto model = saved_model(f.weights);
  const auto want = model_outputs(*model, images);
  check_float32(errors(run_opencv(f.fp32, images), want), "OpenCV dnn");
  check_float32(errors(core::OnnxTorchEvaluator(m).run_all(images), want), "ONNX evaluator");

  // A ConvTranspose the evaluator does not cover (another exporter's output_padding, unequal
  // pads, auto_pad) is refused naming what, never computed wrongly.
  auto with_attribute = [&](const std::function<void(onnx::NodeProto&)>& edit) {
    auto changed = m;
    for (auto& n : *changed.mutable_graph()->mutable_node()) {
      if (n.op_type() == "ConvTranspose") edit(n);
    }
    return changed;
  };
  auto add_ints = [](onnx::NodeProto& n, const std::string& name, std::vector<std::int64_t> values) {
    onnx::AttributeProto* a = nullptr;
    for (auto& existing : *n.mutable_attribute()) {
      if (existing.name() == name) a = &existing;
    }
    if (a == nullptr) a = n.add_attribute();
    a->clear_ints();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (auto v : values) a->add_ints(v);
  };
  CHECK_THROWS_WITH(core::OnnxTorchEvaluator(with_attribute([&](onnx::NodeProto& n) { add_ints(n, "output_padding", {1, 1}); }))
                        .run_all(images),
                    doctest::Contains("covers ConvTranspose without output_padding, output_shape or auto_pad"));
  CHECK_THROWS_WITH(core::OnnxTorchEvaluator(with_attribute([&](onnx::NodeProto& n) { add_ints(n, "pads", {0, 0, 1, 1}); }))
                        .run_all(images),
                    doctest::Contains("covers ConvTranspose with equal pads at both ends only"));
  CHECK_THROWS_WITH(core::OnnxTorchEvaluator(with_attribute([&](onnx::NodeProto& n) {
                      auto* a = n.add_attribute();
                      a->set_name("auto_pad");
                      a->set_type(onnx::AttributeProto::STRING);
                      a->set_s("SAME_UPPER");
                    })).run_all(images),
                    doctest::Contains("covers ConvTranspose without output_padding, output_shape or auto_pad"));
}

TEST_CASE("export seg: --dynamic names Ultralytics' symbolic sizes and runs two batch sizes and image sizes") {
  const auto& f = files();
  auto m = read_model(f.dynamic);
  CHECK(dims(m.graph().output(0)) == std::vector<std::string>{"batch", "116", "anchors"});
  CHECK(dims(m.graph().output(1)) == std::vector<std::string>{"batch", "32", "mask_height", "mask_width"});
  core::OnnxTorchEvaluator evaluator(m);
  auto model = saved_model(f.weights);
  torch::manual_seed(4);
  for (const auto& [b, h, w] : std::vector<std::tuple<int, int, int>>{{1, 320, 320}, {2, 256, 384}}) {
    CAPTURE(b);
    CAPTURE(h);
    const auto images = torch::rand({b, 3, h, w});
    check_float32(errors(evaluator.run_all(images), model_outputs(*model, images)), "dynamic");
  }
}

TEST_CASE("export seg: --half holds float16 and stays within float16 rounding; --int8 quantizes the mask branch's convolutions") {
  const auto& f = files();
  torch::manual_seed(5);
  const auto images = torch::rand({1, 3, 320, 320});
  auto model = saved_model(f.weights);
  const auto want = model_outputs(*model, images);
  auto half = read_model(f.fp16);
  CHECK(half.graph().output(1).type().tensor_type().elem_type() == onnx::TensorProto::FLOAT16);
  const auto e = errors(core::OnnxTorchEvaluator(half).run_all(images), want);
  MESSAGE("float16: max |box| " << e.box << " px, |prob| " << e.prob << ", |coef| " << e.coef << ", |proto| " << e.proto);
  CHECK(e.box < 2.0);
  CHECK(e.prob < 2e-2);
  CHECK(e.proto < 0.1);

  auto int8 = read_model(f.int8);
  CHECK_NOTHROW(onnx::checker::check_model(int8));
  CHECK(meta(int8, "task") == "segment");
  // The weights of the mask coefficient branch (cv4) and of the prototypes' convolutions are
  // dequantized from int8.
  bool cv4 = false, proto = false;
  for (const auto& n : int8.graph().node()) {
    if (n.op_type() != "DequantizeLinear") continue;
    cv4 |= n.input(0).find("model.23.cv4") != std::string::npos;
    proto |= n.input(0).find("model.23.proto.cv3") != std::string::npos;
  }
  CHECK(cv4);
  CHECK(proto);
  const auto out = core::OnnxTorchEvaluator(int8).run_all(images);
  REQUIRE(out.size() == 2);
  CHECK(out[1].sizes() == want.second.sizes());
  // int8 moves the prototypes, but not far: most of their values within 10% of their range.
  const double range = (want.second.max() - want.second.min()).item<double>();
  const double close = ((out[1] - want.second).abs() < 0.1 * range).to(torch::kFloat).mean().item<double>();
  MESSAGE("int8: " << close * 100 << "% of prototype values within 10% of their range");
  CHECK(close > 0.9);
}

TEST_CASE("export seg: val and predict on the exported file give the model's box and mask figures and its masks") {
  const auto& f = files();
  const auto pt = test::run_cli("val --weights " + f.weights + " --model yolo11n-seg --data " + f.data +
                                " --imgsz 320 --square --device cpu --out " + f.dir + "/val-pt");
  INFO(pt.output);
  REQUIRE(pt.exit_code == 0);
  const json want = metrics(f.dir + "/val-pt");
  MESSAGE("PyTorch: mAP50-95 " << want.at("mAP50-95") << ", mask mAP50-95 " << want.at("mask_mAP50-95"));
  CHECK(want.at("mAP50-95").get<double>() > 0.2);  // the trained detector finds the objects
  for (const std::string tag : {"fp32", "fp16"}) {
    CAPTURE(tag);
    const std::string file = tag == "fp32" ? f.fp32 : f.fp16;
    const auto r = test::run_cli("val --weights " + file + " --data " + f.data + " --out " + f.dir + "/val-" + tag);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("Mask(P") != std::string::npos);
    const json got = metrics(f.dir + "/val-" + tag);
    const double tol = tag == "fp32" ? 0.002 : 0.01;
    for (const char* key : {"mAP50", "mAP50-95", "mask_mAP50", "mask_mAP50-95"}) {
      CAPTURE(key);
      CHECK(std::abs(got.at(key).get<double>() - want.at(key).get<double>()) <= tol);
    }
  }

  // predict: the file finds the model's confident detections, each with its mask's outlines.
  // (The file's fixed 320 x 320 input pads the letterboxed image further than the model's
  // rectangular one, so low-confidence detections may differ.)
  const std::string image = test::shared_dir() + "/datasets/coco128-seg/images/train2017/000000000009.jpg";
  auto predict = [&](const std::string& weights, const std::string& out, const std::string& extra) {
    const auto r = test::run_cli("predict model=" + weights + " source=" + image + " imgsz=320 --out " + f.dir + "/" + out +
                                 " " + extra);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    return json::parse(test::read_file(f.dir + "/" + out + "/predictions.json"))[0]["detections"];
  };
  const auto pt_dets = predict(f.weights, "predict-pt", "--model yolo11n-seg device=cpu");
  const auto onnx_dets = predict(f.fp32, "predict-onnx", "");
  auto iou = [](const json& ja, const json& jb) {
    const auto a = ja.get<std::vector<double>>(), b = jb.get<std::vector<double>>();
    const double iw = std::max(0.0, std::min(a[2], b[2]) - std::max(a[0], b[0]));
    const double ih = std::max(0.0, std::min(a[3], b[3]) - std::max(a[1], b[1]));
    const double u = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - iw * ih;
    return u > 0 ? iw * ih / u : 0.0;
  };
  std::size_t confident = 0;
  for (const auto& d : pt_dets) {
    if (d.at("confidence").get<double>() < 0.5) continue;
    ++confident;
    bool found = false;
    for (const auto& e : onnx_dets) {
      found |= e.at("class") == d.at("class") && iou(e.at("box_xyxy"), d.at("box_xyxy")) > 0.9 && !e.at("outlines").empty();
    }
    CAPTURE(d.dump());
    CHECK(found);
  }
  CHECK(confident >= 2);
}

TEST_CASE("export seg: --nms is refused in one line, and a file whose metadata says segment needs its prototypes") {
  const auto& f = files();
  const auto r = test::run_cli("export --weights " + f.weights + " --model yolo11n-seg --imgsz 320 --nms --out " + f.dir +
                               "/nms.onnx");
  CAPTURE(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("export it without --nms") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(f.dir + "/nms.onnx"));

  // The float32 file without output1: refused by val in one line naming what is missing.
  auto m = read_model(f.fp32);
  m.mutable_graph()->mutable_output()->RemoveLast();
  const std::string cut = f.dir + "/no-prototypes.onnx";
  {
    std::ofstream out(cut, std::ios::binary);
    REQUIRE(m.SerializeToOstream(&out));
  }
  const auto v = test::run_cli("val --weights " + cut + " --data " + f.data + " --out " + f.dir + "/val-cut");
  CAPTURE(v.output);
  CHECK(v.exit_code == 2);
  CHECK(v.output.find("needs a second output, the prototype masks") != std::string::npos);

  // A file whose metadata says another task (a pose model, as Ultralytics would write one):
  // refused in one line naming the task, before anything is run.
  auto pose = read_model(f.fp32);
  for (auto& entry : *pose.mutable_metadata_props()) {
    if (entry.key() == "task") entry.set_value("pose");
  }
  const std::string pose_file = f.dir + "/pose.onnx";
  {
    std::ofstream out(pose_file, std::ios::binary);
    REQUIRE(pose.SerializeToOstream(&out));
  }
  const auto p = test::run_cli("predict --weights " + pose_file + " --source " + test::shared_dir() +
                               "/datasets/coco128-seg/images/train2017/000000000009.jpg --out " + f.dir + "/pose-out");
  CAPTURE(p.output);
  CHECK(p.exit_code == 2);
  CHECK(p.output.find("its metadata says task pose; yoloflow runs exported detection and segmentation models") !=
        std::string::npos);
  CHECK_FALSE(std::filesystem::exists(f.dir + "/pose-out/predictions.json"));
}
