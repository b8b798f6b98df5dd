// INT8 export and exported files in val and predict, checked as a user would: `yoloflow export
// --int8` on real weights (the coco128 fixture: YOLO11n trained by yoloflow) writes a QDQ file
// the ONNX checker accepts, with int8 weights per output channel around every convolution but
// the DFL's; `yoloflow val` on the float32 file (OpenCV's dnn) gives the PyTorch model's mAP, and
// on the int8 file (the LibTorch evaluator, OpenCV refusing it) stays within the target of it.
// Small: 16 coco128 images at 320.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include "support/coco_subset.h"
#include "support/onnx_file.h"
#include "support/paths.h"
#include "support/plugins.h"
#include "support/run_cli.h"
#include "training/export/activation_calibration.h"
#include "training/export/onnx_export.h"
#include "training/export/onnx_model_build.h"
#include "training/export/onnx_torch_evaluator.h"
#include "training/model/model_factory.h"
#include "training/model/weights_io.h"

using namespace yoloflow;
using json = nlohmann::json;

namespace {

using test::meta;
using test::read_model;

std::string fixture() { return test::fixtures_dir() + "/coco128-val-parity/coco128-yolo11n.pt"; }

// The files every case here uses, made once: a 16-image coco128 subset, the fixture exported at
// 320 as float32, float16 and int8 (calibrated on the subset), and its PyTorch val (square).
struct Files {
  std::string dir, data, fp32, fp16, int8, nms, int8_log;
  double pt_map50 = 0, pt_map = 0;
};

const Files& files() {
  static const Files f = [] {
    Files f;
    f.dir = test::temp_dir("export-int8");
    f.data = test::write_coco128_subset(f.dir + "/data", 16);
    auto ex = [&](const std::string& out, const std::string& args) {
      const auto r = test::run_cli("export --weights " + fixture() + " --model yolo11n --imgsz 320 --out " + out + " " + args);
      INFO(r.output);
      REQUIRE(r.exit_code == 0);
      return r.output;
    };
    f.fp32 = f.dir + "/fp32.onnx";
    f.fp16 = f.dir + "/fp16.onnx";
    f.int8 = f.dir + "/int8.onnx";
    f.nms = f.dir + "/nms.onnx";
    ex(f.fp32, "");
    ex(f.fp16, "--half");
    ex(f.nms, "--nms");
    f.int8_log = ex(f.int8, "--int8 --data " + f.data + " --fraction 0.5");
    const auto v = test::run_cli("val --weights " + fixture() + " --model yolo11n --data " + f.data +
                                 " --imgsz 320 --square --device cpu --out " + f.dir + "/val-pt");
    INFO(v.output);
    REQUIRE(v.exit_code == 0);
    const json m = json::parse(test::read_file(f.dir + "/val-pt/metrics.json"));
    f.pt_map50 = m.at("mAP50").get<double>();
    f.pt_map = m.at("mAP50-95").get<double>();
    return f;
  }();
  return f;
}

struct Val {
  int exit_code = -1;
  std::string output;
  double map50 = 0, map = 0;
};

Val val_onnx(const std::string& file, const std::string& tag, const std::string& extra = "") {
  const auto& f = files();
  const auto r = test::run_cli("val --weights " + file + " --data " + f.data + " --out " + f.dir + "/val-" + tag + " " + extra);
  Val v{r.exit_code, r.output};
  if (r.exit_code == 0) {
    const json m = json::parse(test::read_file(f.dir + "/val-" + tag + "/metrics.json"));
    v.map50 = m.at("mAP50").get<double>();
    v.map = m.at("mAP50-95").get<double>();
  }
  return v;
}

int count_ops(const onnx::ModelProto& m, const std::string& op) {
  int n = 0;
  for (const auto& node : m.graph().node()) n += node.op_type() == op;
  return n;
}

}  // namespace

TEST_CASE("export --int8: a QDQ file calibrated on the data passes the ONNX checker") {
  const auto& f = files();
  INFO(f.int8_log);
  onnx::checker::check_model(f.int8);  // throws on a malformed file
  const auto m = read_model(f.int8);
  const auto float_model = read_model(f.fp32);
  const int convs = count_ops(float_model, "Conv");
  REQUIRE(convs > 80);
  CHECK(count_ops(m, "Conv") == convs);
  // Every convolution but the DFL's: its input quantized per tensor, its weight per channel.
  int weight_dq = 0, activation_q = 0;
  std::set<std::string> conv_inputs;
  for (const auto& n : m.graph().node()) {
    if (n.op_type() == "Conv") conv_inputs.insert(n.input(0));
  }
  std::map<std::string, const onnx::TensorProto*> init;
  for (const auto& t : m.graph().initializer()) init[t.name()] = &t;
  for (const auto& n : m.graph().node()) {
    if (n.op_type() == "QuantizeLinear") {
      ++activation_q;
      REQUIRE(init.count(n.input(2)));
      CHECK(init[n.input(2)]->data_type() == onnx::TensorProto::INT8);  // symmetric int8, TensorRT's
      CHECK(init[n.input(1)]->dims_size() == 0);                        // per tensor
    }
    if (n.op_type() == "DequantizeLinear" && init.count(n.input(0)) != 0) {
      ++weight_dq;
      const auto& w = *init[n.input(0)];
      CHECK(w.data_type() == onnx::TensorProto::INT8);
      CHECK(init[n.input(1)]->dims_size() == 1);
      CHECK(init[n.input(1)]->dims(0) == w.dims(0));  // one scale per output channel
      REQUIRE(n.attribute_size() == 1);
      CHECK(n.attribute(0).i() == 0);
    }
  }
  // The DFL's one weight is read by a convolution per level.
  int dfl = 0;
  for (const auto& n : m.graph().node()) dfl += n.op_type() == "Conv" && n.input(1) == "model.23.dfl.conv.weight";
  CHECK(dfl == 3);
  CHECK(weight_dq == convs - dfl);
  CHECK(activation_q > 0);
  CHECK(activation_q <= weight_dq);  // a tensor read by several convolutions is quantized once
  CHECK(f.int8_log.find(std::to_string(convs - dfl) + " convolutions quantized, 1 kept in float (model.23.dfl.conv.weight)") !=
        std::string::npos);
  CHECK(f.int8_log.find("on 8 images") != std::string::npos);  // --fraction 0.5 of 16
  // Ultralytics' metadata, with int8 in its args.
  CHECK(meta(m, "imgsz") == "[320, 320]");
  CHECK(meta(m, "names").rfind("{0: '0', 1: '1'", 0) == 0);  // a plain state dict names no class
  CHECK(meta(m, "args").find("'int8': True") != std::string::npos);
  // The int8 weights take a quarter of the float32 file's bytes.
  std::ifstream a(f.int8, std::ios::binary | std::ios::ate), b(f.fp32, std::ios::binary | std::ios::ate);
  CHECK(static_cast<double>(a.tellg()) < 0.4 * static_cast<double>(b.tellg()));
}

TEST_CASE("val on exported files: float32 gives the PyTorch model's mAP, int8 stays within target of it") {
  const auto& f = files();
  // The graph evaluated op by op is the PyTorch model, and so is OpenCV 4.6's dnn run of it
  // (with its layer fusion off: fused, it validated the fixture 0.0155 mAP50-95 lower).
  const Val fp32 = val_onnx(f.fp32, "fp32-libtorch", "--runtime libtorch");
  INFO(fp32.output);
  REQUIRE(fp32.exit_code == 0);
  MESSAGE("PyTorch mAP50 " << f.pt_map50 << " mAP50-95 " << f.pt_map << "; ONNX fp32 " << fp32.map50 << " " << fp32.map);
  CHECK(std::abs(fp32.map - f.pt_map) <= 0.002);
  CHECK(std::abs(fp32.map50 - f.pt_map50) <= 0.002);
  const Val opencv = val_onnx(f.fp32, "fp32");
  INFO(opencv.output);
  REQUIRE(opencv.exit_code == 0);
  CHECK(opencv.output.find("via OpenCV") != std::string::npos);
  MESSAGE("ONNX fp32 in OpenCV dnn: mAP50 " << opencv.map50 << " mAP50-95 " << opencv.map);
  CHECK(std::abs(opencv.map - f.pt_map) <= 0.002);
  CHECK(std::abs(opencv.map50 - f.pt_map50) <= 0.002);

  const Val int8 = val_onnx(f.int8, "int8");
  INFO(int8.output);
  REQUIRE(int8.exit_code == 0);
  // OpenCV 4.6 refuses the file; the command says so and which runtime ran it instead.
  CHECK(int8.output.find("dnn cannot run this file") != std::string::npos);
  CHECK(int8.output.find("LibTorch evaluator of the ONNX operators") != std::string::npos);
  MESSAGE("ONNX int8 mAP50 " << int8.map50 << " mAP50-95 " << int8.map);
  CHECK(int8.map > 0.1);
  CHECK(std::abs(int8.map - fp32.map) <= 0.015);

  const Val fp16 = val_onnx(f.fp16, "fp16");
  INFO(fp16.output);
  REQUIRE(fp16.exit_code == 0);
  CHECK(fp16.output.find("float16") != std::string::npos);
  // 16 images: a box or two moved across an IoU threshold by float16 rounding moves mAP50-95 by
  // a few thousandths (0.0038 with OpenBLAS's sums, under 0.003 with the reference BLAS's).
  CHECK(std::abs(fp16.map - fp32.map) <= 0.005);
}

TEST_CASE("val and predict refuse in one line what cannot run here, naming where it runs") {
  const auto& f = files();
  const Val nms = val_onnx(f.nms, "nms");
  CHECK(nms.exit_code == 2);
  CHECK(nms.output.find("--nms") != std::string::npos);
  CHECK(nms.output.find("ONNX Runtime") != std::string::npos);
  const Val opencv = val_onnx(f.int8, "int8-opencv", "--runtime opencv");
  CHECK(opencv.exit_code == 2);
  CHECK(opencv.output.find("trtexec --onnx=" + f.int8 + " --int8") != std::string::npos);
  const Val imgsz = val_onnx(f.fp32, "imgsz", "--imgsz 640");
  CHECK(imgsz.exit_code == 2);
  CHECK(imgsz.output.find("was exported at 320x320") != std::string::npos);
  const auto p = test::run_cli("predict --weights " + f.nms + " --source " + test::coco128_dir() + "/images/val2017");
  CHECK(p.exit_code == 2);
  CHECK(p.output.find("--nms") != std::string::npos);
  test::write_file(f.dir + "/broken.onnx", "not a model");
  const Val broken = val_onnx(f.dir + "/broken.onnx", "broken");
  CHECK(broken.exit_code == 2);
  CHECK(broken.output.find("not an ONNX model") != std::string::npos);
}

TEST_CASE("predict on an int8 file finds what the float32 file finds") {
  const auto& f = files();
  const std::string image = test::coco128_dir() + "/images/train2017/000000000009.jpg";  // one the weights know
  auto run = [&](const std::string& weights, const std::string& tag) {
    const auto r = test::run_cli("predict --weights " + weights + " --source " + image + " --no-images --out " + f.dir +
                                 "/predict-" + tag);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    return json::parse(test::read_file(f.dir + "/predict-" + tag + "/predictions.json"));
  };
  const json a = run(f.fp32, "fp32").at(0).at("detections"), b = run(f.int8, "int8").at(0).at("detections");
  INFO(a.dump());
  INFO(b.dump());
  auto iou = [](const json& p, const json& q) {
    const double iw = std::max(0.0, std::min(p[2].get<double>(), q[2].get<double>()) - std::max(p[0].get<double>(), q[0].get<double>()));
    const double ih = std::max(0.0, std::min(p[3].get<double>(), q[3].get<double>()) - std::max(p[1].get<double>(), q[1].get<double>()));
    const double area = [](const json& r) { return (r[2].get<double>() - r[0].get<double>()) * (r[3].get<double>() - r[1].get<double>()); }(p) +
                        [](const json& r) { return (r[2].get<double>() - r[0].get<double>()) * (r[3].get<double>() - r[1].get<double>()); }(q);
    return iw * ih / (area - iw * ih);
  };
  // Every confident float32 detection is found by the int8 file: same class, nearly the same box.
  int confident = 0;
  for (const auto& d : a) {
    if (d.at("confidence").get<double>() < 0.5) continue;
    ++confident;
    bool found = false;
    for (const auto& e : b) found = found || (e.at("class") == d.at("class") && iou(d.at("box_xyxy"), e.at("box_xyxy")) > 0.8);
    CHECK_MESSAGE(found, d.dump());
  }
  CHECK(confident >= 3);
}

TEST_CASE("export: Ultralytics' other formats are refused with the way to them from the ONNX file") {
  const auto dir = test::temp_dir("export-formats");
  const auto base = "export --weights " + fixture() + " --model yolo11n --out " + dir + "/x.onnx --format ";
  const std::vector<std::pair<std::string, std::string>> cases{
      {"engine", "trtexec --onnx=model.onnx"},
      {"openvino", "ovc model.onnx"},
      {"torchscript", "TorchScript is not written"},
      {"tflite", "onnx2tf -i model.onnx"},
      {"banana", "--format banana is not an export format"},
  };
  for (const auto& [format, expected] : cases) {
    const auto r = test::run_cli(base + format);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find(expected) != std::string::npos);
  }
  const auto no_data = test::run_cli("export --weights " + fixture() + " --model yolo11n --out " + dir + "/x.onnx --int8");
  CHECK(no_data.exit_code == 2);
  CHECK(no_data.output.find("--int8 needs --data") != std::string::npos);
  CHECK_FALSE(std::ifstream(dir + "/x.onnx").good());
}

TEST_CASE("ONNX evaluator: the float32 file computes the LibTorch forward; float16 rounds between nodes") {
  auto& pm = test::plugins_with("yolo11");
  auto m = core::create_model(pm.registry(), "yolo11n", 80);
  core::load_weights(m->module(), core::read_weights(fixture()), fixture());
  m->module().eval();
  core::OnnxExportOptions o;
  o.height = 160;
  o.width = 224;
  o.batch = 2;
  const auto proto = core::build_onnx_model(*m, o, nullptr);
  torch::manual_seed(0);
  const auto x = torch::rand({2, 3, 160, 224});
  torch::Tensor ref;
  {
    torch::NoGradGuard ng;
    const auto d = m->decode(m->forward_train(x));
    const auto xy = (d.boxes.slice(2, 0, 2) + d.boxes.slice(2, 2, 4)) / 2, wh = d.boxes.slice(2, 2, 4) - d.boxes.slice(2, 0, 2);
    ref = torch::cat({xy, wh, d.scores}, 2).transpose(1, 2);
  }
  core::OnnxTorchEvaluator e(proto);
  const auto y = e.run(x);
  REQUIRE(y.sizes() == ref.sizes());
  // Float32 both, batch norm folded in one: rounding apart by about a thousandth of a pixel.
  CHECK((y.slice(1, 0, 4) - ref.slice(1, 0, 4)).abs().max().item<double>() < 5e-3);
  CHECK((y.slice(1, 4) - ref.slice(1, 4)).abs().max().item<double>() < 1e-4);

  o.half = true;
  core::OnnxTorchEvaluator h(core::build_onnx_model(*m, o, nullptr));
  CHECK(h.float16());
  const auto yh = h.run(x);
  const double box = (yh.slice(1, 0, 4) - ref.slice(1, 0, 4)).abs().max().item<double>();
  MESSAGE("float16 file, max |box| " << box << " px");
  CHECK(box > 1e-3);  // float16 rounding shows
  CHECK(box < 1.0);
}

TEST_CASE("calibration: minmax keeps outliers, percentile and entropy clip them") {
  torch::manual_seed(0);
  const auto bulk = torch::randn({1000000});
  const auto outliers = torch::full({20}, 60.0f);
  core::ActivationHistogram h;
  h.add(bulk.slice(0, 0, 500000));
  h.add(torch::cat({bulk.slice(0, 500000), outliers}));  // the range doubles: counts merge
  CHECK(h.count() == 1000020);
  CHECK(h.threshold(core::CalibrationMethod::MinMax) == doctest::Approx(60.0));
  const double p = h.threshold(core::CalibrationMethod::Percentile, 99.99);
  CHECK(p > 3.5);  // |N(0, 1)|'s 99.99th percentile is 3.89
  CHECK(p < 4.5);
  const double e = h.threshold(core::CalibrationMethod::Entropy);
  MESSAGE("percentile " << p << ", entropy " << e);
  CHECK(e > 2.0);
  CHECK(e < 12.0);
  CHECK_THROWS_AS(core::parse_calibration_method("kl", "--calibration"), InvalidInput);
}

