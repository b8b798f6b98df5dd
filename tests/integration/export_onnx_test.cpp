// `yoloflow export --format onnx`, checked as a user would: the CLI writes the file, the
// ONNX checker accepts it, Python's onnx reads its metadata the way Ultralytics' tools do,
// and an independent runtime (OpenCV's dnn module) runs it on the parity fixture's input
// and reproduces Ultralytics' reference outputs.
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <iterator>

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <opencv2/dnn.hpp>

#include "training/export/onnx_export.h"
#include "training/model/model_factory.h"
#include "training/model/weights_io.h"
#include "support/onnx_torch_eval.h"
#include "support/onnx_file.h"
#include "support/paths.h"
#include "support/plugins.h"
#include "support/run_cli.h"

using namespace yoloflow;

namespace {

using test::meta;
using test::read_model;

std::string fixture(const std::string& name) { return test::fixtures_dir() + "/yolo11n-parity/" + name; }

torch::Tensor load_tensor(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return torch::pickle_load(bytes).toTensor();
}

std::vector<std::string> dims(const onnx::ValueInfoProto& v) {
  std::vector<std::string> out;
  for (const auto& d : v.type().tensor_type().shape().dim()) {
    out.push_back(d.has_dim_param() ? d.dim_param() : std::to_string(d.dim_value()));
  }
  return out;
}

// Runs the file with OpenCV's dnn module on a float32 NCHW tensor.
torch::Tensor run_opencv(const std::string& path, const torch::Tensor& images) {
  auto net = cv::dnn::readNetFromONNX(path);
  const auto x = images.contiguous();
  const std::vector<int> shape(x.sizes().begin(), x.sizes().end());
  cv::Mat blob(static_cast<int>(shape.size()), shape.data(), CV_32F, x.data_ptr<float>());
  net.setInput(blob.clone(), "images");
  cv::Mat out = net.forward();
  std::vector<std::int64_t> out_shape;
  for (int i = 0; i < out.dims; ++i) out_shape.push_back(out.size[i]);
  return torch::from_blob(out.ptr<float>(), out_shape, torch::kFloat).clone();
}

// yoloflow's own LibTorch eval output for the fixture weights, in the export's layout
// (B, 4 + nc, A): centre x, centre y, width, height, then probabilities.
torch::Tensor libtorch_reference(const torch::Tensor& images) {
  auto& pm = test::plugins_with("yolo11");
  auto m = core::create_model(pm.registry(), "yolo11n", 80);
  core::load_weights(m->module(), core::read_weights(fixture("yolo11n.pt")), fixture("yolo11n.pt"));
  m->module().eval();
  torch::NoGradGuard ng;
  return test::export_layout(m->decode(m->forward_train(images)));
}

struct Errors {
  double box = 0, prob = 0;
};
Errors compare(const torch::Tensor& ours, const torch::Tensor& ref) {
  REQUIRE(ours.sizes() == ref.sizes());
  return {(ours.slice(1, 0, 4) - ref.slice(1, 0, 4)).abs().max().item<double>(),
          (ours.slice(1, 4) - ref.slice(1, 4)).abs().max().item<double>()};
}

// `ours` against `ref`, both (B, 4 + nc, A): prints the largest differences under `what` and
// checks them against the tolerances (box in pixels, probability).
void check_close(const torch::Tensor& ours, const torch::Tensor& ref, const std::string& what, double box_tol = 1e-3,
                 double prob_tol = 1e-4) {
  const auto e = compare(ours, ref);
  MESSAGE(what << ": max |box| " << e.box << " px, max |prob| " << e.prob);
  INFO(what);
  CHECK(e.box < box_tol);
  CHECK(e.prob < prob_tol);
}

// The same file with its symbolic input dimensions set: OpenCV 4.6's dnn module computes shapes
// once, when it reads a file, so it runs a --dynamic file only with its sizes filled in (what
// a runtime does when it specialises the graph for one input shape). The graph is untouched.
std::string with_input_shape(const std::string& path, std::int64_t b, std::int64_t h, std::int64_t w) {
  auto m = read_model(path);
  auto* shape = m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  const std::int64_t values[] = {b, 3, h, w};
  for (int i = 0; i < 4; ++i) shape->mutable_dim(i)->set_dim_value(values[i]);
  m.mutable_graph()->clear_value_info();
  const auto out = path + "." + std::to_string(b) + "x" + std::to_string(h) + "x" + std::to_string(w) + ".onnx";
  std::ofstream f(out, std::ios::binary);
  REQUIRE(m.SerializeToOstream(&f));
  return out;
}

// A --half file with its float16 tensors widened to float32, input and output declared float32:
// OpenCV 4.6 reads no float16 tensors. What it then runs is the float16 file's graph and
// float16-rounded weights in float32 arithmetic.
std::string widened(const std::string& path) {
  auto m = read_model(path);
  auto* g = m.mutable_graph();
  for (auto& t : *g->mutable_initializer()) {
    if (t.data_type() != onnx::TensorProto::FLOAT16) continue;
    std::vector<std::int64_t> shape(t.dims().begin(), t.dims().end());
    const auto& raw = t.raw_data();
    const auto wide = torch::from_blob(const_cast<char*>(raw.data()), shape, torch::kHalf).to(torch::kFloat).contiguous();
    t.set_data_type(onnx::TensorProto::FLOAT);
    t.set_raw_data(std::string(static_cast<const char*>(wide.data_ptr()), wide.numel() * 4));
  }
  g->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  g->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  g->clear_value_info();
  const auto out = path + ".float32.onnx";
  std::ofstream f(out, std::ios::binary);
  REQUIRE(m.SerializeToOstream(&f));
  return out;
}

int count_ops(const onnx::ModelProto& m, const std::string& op) {
  int n = 0;
  for (const auto& node : m.graph().node()) n += node.op_type() == op;
  return n;
}

std::string export_cli(const std::string& out, const std::string& extra) {
  const auto r = test::run_cli("export --weights " + fixture("yolo11n.pt") + " --model yolo11n --out " + out + " " +
                               extra);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return r.output;
}

}  // namespace

TEST_CASE("export: yolo11n at 320 passes the ONNX checker and OpenCV dnn reproduces Ultralytics' outputs") {
  const auto dir = test::temp_dir("export-onnx");
  const auto path = dir + "/yolo11n.onnx";
  const auto text = export_cli(path, "--format onnx --imgsz 320");
  CHECK(text.find("output0 (1, 84, 2100)") != std::string::npos);
  onnx::checker::check_model(path);  // throws on a malformed file

  const auto m = read_model(path);
  REQUIRE(m.graph().input_size() == 1);
  REQUIRE(m.graph().output_size() == 1);
  CHECK(m.graph().input(0).name() == "images");
  CHECK(dims(m.graph().input(0)) == std::vector<std::string>{"1", "3", "320", "320"});
  CHECK(m.graph().output(0).name() == "output0");
  CHECK(dims(m.graph().output(0)) == std::vector<std::string>{"1", "84", "2100"});
  CHECK(m.opset_import(0).version() == 17);
  // Batch norm is folded: no BatchNormalization node, one bias per convolution.
  CHECK(count_ops(m, "BatchNormalization") == 0);
  CHECK(count_ops(m, "Conv") > 80);

  const auto input = load_tensor(fixture("input.pt"));
  const auto ref = load_tensor(fixture("ref_eval.pt"));
  const auto ours = run_opencv(path, input);
  check_close(ours, ref, "OpenCV dnn vs Ultralytics");
  check_close(ours, libtorch_reference(input), "OpenCV dnn vs yoloflow LibTorch");
}

TEST_CASE("export: a --dynamic file gives the same outputs at two batch sizes and two image sizes") {
  const auto dir = test::temp_dir("export-onnx-dynamic");
  const auto path = dir + "/dynamic.onnx";
  export_cli(path, "--dynamic");
  onnx::checker::check_model(path);
  const auto m = read_model(path);
  CHECK(dims(m.graph().input(0)) == std::vector<std::string>{"batch", "3", "height", "width"});
  CHECK(dims(m.graph().output(0)) == std::vector<std::string>{"batch", "84", "anchors"});
  // Anchors come from the feature maps, not from constants of one size.
  CHECK(count_ops(m, "CumSum") == 6);

  const auto fixture_input = load_tensor(fixture("input.pt"));
  check_close(run_opencv(with_input_shape(path, 1, 320, 320), fixture_input), load_tensor(fixture("ref_eval.pt")),
              "--dynamic at 1x320x320, OpenCV dnn vs Ultralytics");
  torch::manual_seed(7);
  const auto x = torch::rand({2, 3, 256, 384});
  const auto ours = run_opencv(with_input_shape(path, 2, 256, 384), x);
  CHECK(ours.sizes() == torch::IntArrayRef({2, 84, 32 * 48 + 16 * 24 + 8 * 12}));
  check_close(ours, libtorch_reference(x), "--dynamic at 2x256x384, OpenCV dnn vs yoloflow LibTorch");
  // The file as written, symbolic dimensions and all, evaluated op by op by PyTorch.
  check_close(test::onnx_torch_eval(path, x, dir), libtorch_reference(x),
              "--dynamic as written at 2x256x384, op-by-op PyTorch float64 vs LibTorch");
}

TEST_CASE("export: a --half file holds float16 and stays within float16 rounding of the reference") {
  const auto dir = test::temp_dir("export-onnx-half");
  const auto path = dir + "/half.onnx";
  export_cli(path, "--half --imgsz 320");
  onnx::checker::check_model(path);
  const auto m = read_model(path);
  CHECK(m.graph().input(0).type().tensor_type().elem_type() == onnx::TensorProto::FLOAT16);
  CHECK(m.graph().output(0).type().tensor_type().elem_type() == onnx::TensorProto::FLOAT16);
  int half = 0, single = 0;
  for (const auto& t : m.graph().initializer()) {
    half += t.data_type() == onnx::TensorProto::FLOAT16;
    single += t.data_type() == onnx::TensorProto::FLOAT;
  }
  CHECK(half > 150);
  CHECK(single == 2);  // only the two upsamplings' scales, which ONNX wants in float32
  CHECK(meta(m, "args").find("'half': True") != std::string::npos);
  // float16 weights (relative rounding 2^-11), float32 arithmetic: looser than float32's 1e-3 / 1e-4.
  check_close(run_opencv(widened(path), load_tensor(fixture("input.pt"))), load_tensor(fixture("ref_eval.pt")),
              "--half weights (float32 arithmetic), OpenCV dnn vs Ultralytics", 1e-2, 1e-3);
}

TEST_CASE("export: --nms appends NMS with Ultralytics' output layout and the predict defaults") {
  const auto dir = test::temp_dir("export-onnx-nms");
  const auto path = dir + "/nms.onnx";
  const auto text = export_cli(path, "--nms --imgsz 320 --batch 2");
  CHECK(text.find("output0 (2, 300, 6)") != std::string::npos);
  onnx::checker::check_model(path);
  const auto m = read_model(path);
  CHECK(dims(m.graph().output(0)) == std::vector<std::string>{"2", "300", "6"});
  CHECK(count_ops(m, "NonMaxSuppression") == 1);
  CHECK(count_ops(m, "TopK") == 1);
  CHECK(meta(m, "args").find("'nms': True") != std::string::npos);
  // Thresholds as given: conf, then iou, in the NonMaxSuppression inputs.
  for (const auto& n : m.graph().node()) {
    if (n.op_type() != "NonMaxSuppression") continue;
    std::map<std::string, float> values;
    for (const auto& t : m.graph().initializer()) {
      if (t.data_type() == onnx::TensorProto::FLOAT && t.dims_size() == 1 && t.dims(0) == 1) {
        float v;
        std::memcpy(&v, t.raw_data().data(), 4);
        values[t.name()] = v;
      }
    }
    CHECK(values.at(n.input(3)) == doctest::Approx(0.7));
    CHECK(values.at(n.input(4)) == doctest::Approx(0.25));
  }
}

TEST_CASE("export: every YOLO11 scale, non-square, matches its LibTorch forward in OpenCV dnn") {
  const auto dir = test::temp_dir("export-onnx-scales");
  auto& pm = test::plugins_with("yolo11");
  torch::manual_seed(3);
  const auto x = torch::rand({1, 3, 96, 160});
  for (const std::string scale : {"n", "s", "m", "l", "x"}) {
    auto m = core::create_model(pm.registry(), "yolo11" + scale, 5);
    {
      // Batch-norm statistics away from their initial (0, 1), so folding them is exercised.
      torch::NoGradGuard ng;
      for (auto& b : m->module().named_buffers()) {
        if (b.key().find("running_mean") != std::string::npos) b.value().normal_(0.0, 0.1);
        if (b.key().find("running_var") != std::string::npos) b.value().uniform_(0.5, 1.5);
      }
    }
    m->module().eval();
    core::OnnxExportOptions o;
    o.height = 96;
    o.width = 160;
    const auto path = dir + "/yolo11" + scale + ".onnx";
    const auto r = core::export_onnx(*m, o, path);
    CHECK(r.output_shape == std::vector<std::int64_t>{1, 9, 12 * 20 + 6 * 10 + 3 * 5});
    torch::Tensor ref;
    {
      torch::NoGradGuard ng;
      ref = test::export_layout(m->decode(m->forward_train(x)));
    }
    check_close(run_opencv(path, x), ref, std::string("yolo11") + scale + " at 96x160, OpenCV dnn vs LibTorch");
  }
}

TEST_CASE("export: metadata reads as Ultralytics' ONNX metadata in Python") {
  const auto dir = test::temp_dir("export-onnx-meta");
  const auto path = dir + "/m.onnx";
  export_cli(path, "--imgsz 256 320 --batch 2");
  const auto m = read_model(path);
  CHECK(meta(m, "stride") == "32");
  CHECK(meta(m, "task") == "detect");
  CHECK(meta(m, "batch") == "2");
  CHECK(meta(m, "imgsz") == "[256, 320]");
  CHECK(meta(m, "names").rfind("{0: '0', 1: '1', ", 0) == 0);
  CHECK(dims(m.graph().output(0)) == std::vector<std::string>{"2", "84", "1680"});
  // What Ultralytics' AutoBackend does with an ONNX file's custom metadata: int() some values,
  // eval() others.
  const std::string script =
      "import ast, onnx\n"
      "m = onnx.load('" + path + "')\n"
      "onnx.checker.check_model(m)\n"
      "d = {p.key: p.value for p in m.metadata_props}\n"
      "names = ast.literal_eval(d['names']); args = ast.literal_eval(d['args'])\n"
      "print(int(d['stride']), int(d['batch']), ast.literal_eval(d['imgsz']), d['task'], len(names), names[79],"
      " args['nms'], args['dynamic'], args['half'])\n";
  test::write_file(dir + "/read.py", script);
  const auto r = test::run_shell(test::python() + " " + dir + "/read.py");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("32 2 [256, 320] detect 80 79 False False False") != std::string::npos);
}

TEST_CASE("export: class names are written as Python string literals") {
  CHECK(core::python_repr("person") == "'person'");
  CHECK(core::python_repr("it's") == "\"it's\"");
  CHECK(core::python_repr("a'b\"c") == "'a\\'b\"c'");
  CHECK(core::python_repr("back\\slash") == "'back\\\\slash'");
}

TEST_CASE("export: bad inputs give one clear line and exit code 2") {
  const auto dir = test::temp_dir("export-onnx-bad");
  const auto base = "export --weights " + fixture("yolo11n.pt") + " --model yolo11n --out " + dir + "/x.onnx ";
  struct Case {
    std::string args, expected;
  };
  const std::vector<Case> cases{
      {"export --weights " + dir + "/missing.pt --model yolo11n", "missing.pt"},
      {base + "--format torchscript", "--format torchscript is not written by yoloflow"},
      {base + "--opset 11", "--opset 11 is not supported: use 13 to 17"},
      {"export --weights " + fixture("yolo11n.pt"), "--model"},
      {base + "--imgsz 320 320 320", "imgsz"},
  };
  for (const auto& c : cases) {
    const auto r = test::run_cli(c.args);
    INFO(c.args);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find(c.expected) != std::string::npos);
  }
  CHECK_FALSE(std::ifstream(dir + "/x.onnx").good());
}

