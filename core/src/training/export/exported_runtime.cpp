#include "training/export/exported_runtime.h"

#include <set>
#include <sstream>

#include "training/export/exported_model.h"
#include "training/export/onnx_torch_evaluator.h"
#include "yoloflow/error.h"
#ifdef YOLOFLOW_WITH_OPENCV_DNN
#include <opencv2/core/utils/logger.hpp>
#include <opencv2/dnn.hpp>
#endif

namespace yoloflow::core {
namespace {

class EvaluatorRunner final : public OnnxRunner {
 public:
  explicit EvaluatorRunner(const onnx::ModelProto& m) : evaluator_(m) {}
  std::vector<torch::Tensor> run(const torch::Tensor& images) override { return evaluator_.run_all(images); }

 private:
  OnnxTorchEvaluator evaluator_;
};

#ifdef YOLOFLOW_WITH_OPENCV_DNN
class OpenCvRunner final : public OnnxRunner {
 public:
  // `bytes`: the file with its input sizes fixed; `outputs`: the graph's output names in order.
  OpenCvRunner(const std::string& bytes, std::string input, std::vector<std::string> outputs)
      : input_(std::move(input)), outputs_(std::move(outputs)) {
    net_ = cv::dnn::readNetFromONNX(bytes.data(), bytes.size());
    // OpenCV 4.6's layer fusion changes what the graph computes: on the coco128 fixture at 640 it
    // validated 0.712 / 0.535 fused and 0.721 / 0.550 unfused, the LibTorch evaluator's figures
    // (docs/export.md; the drift is measured in tests/integration/predict_test.cpp).
    net_.enableFusion(false);
  }
  std::vector<torch::Tensor> run(const torch::Tensor& images) override {
    auto x = images.to(torch::kFloat).contiguous();
    const int dims[4] = {static_cast<int>(x.size(0)), static_cast<int>(x.size(1)), static_cast<int>(x.size(2)),
                         static_cast<int>(x.size(3))};
    cv::Mat blob(4, dims, CV_32F, x.data_ptr<float>());
    net_.setInput(blob, input_);
    std::vector<cv::Mat> outs;
    net_.forward(outs, outputs_);
    std::vector<torch::Tensor> result;
    for (const auto& out : outs) {
      std::vector<std::int64_t> shape;
      for (int k = 0; k < out.dims; ++k) shape.push_back(out.size[k]);
      result.push_back(torch::from_blob(const_cast<float*>(out.ptr<float>()), shape, torch::kFloat).clone());
    }
    return result;
  }

 private:
  cv::dnn::Net net_;
  std::string input_;
  std::vector<std::string> outputs_;
};

// What OpenCV refused, without its source locations: the node it names and the check that
// failed ("Node [DequantizeLinear@ai.onnx]:(onnx_node!x) parse error: OpenCV(4.6.0) file:770: error:
// (-215:Assertion failed) inputs.size() == 1 in function 'parseDequantizeLinear'").
std::string opencv_reason(const cv::Exception& e) {
  std::string s = e.err.empty() ? e.what() : e.err;
  std::string node;
  if (const auto b = s.find("Node ["); b != std::string::npos) {
    const auto end = s.find(']', b);
    if (end != std::string::npos) node = s.substr(b + 6, end - b - 6);
    if (const auto at = node.find('@'); at != std::string::npos) node = node.substr(0, at);
  }
  if (const auto err = s.rfind("error: "); err != std::string::npos) s = s.substr(err + 7);
  if (const auto paren = s.find(") "); s.rfind("(-", 0) == 0 && paren != std::string::npos) s = s.substr(paren + 2);
  if (const auto nl = s.find('\n'); nl != std::string::npos) s = s.substr(0, nl);
  if (s.size() > 120) s = s.substr(0, 120) + "...";
  return node.empty() ? s : "its " + node + " node: " + s;
}
#endif

std::string input_name(const onnx::ModelProto& m) {
  std::set<std::string> initializers;
  for (const auto& t : m.graph().initializer()) initializers.insert(t.name());
  for (const auto& v : m.graph().input()) {
    if (initializers.count(v.name()) == 0) return v.name();
  }
  return "images";
}

std::string elsewhere(const ExportedFile& f) {
  if (f.int8) return "ONNX Runtime, or TensorRT (trtexec --onnx=" + f.path + " --int8)";
  if (f.half) return "ONNX Runtime (CUDA), TensorRT (trtexec --onnx=" + f.path + " --fp16) or OpenVINO";
  return "ONNX Runtime, TensorRT or OpenVINO";
}

}  // namespace

OnnxRuntimeChoice parse_onnx_runtime(const std::string& name, const std::string& option) {
  if (name == "auto" || name.empty()) return OnnxRuntimeChoice::Auto;
  if (name == "opencv") return OnnxRuntimeChoice::OpenCv;
  if (name == "libtorch") return OnnxRuntimeChoice::LibTorch;
  throw InvalidInput(option + " " + name + ": the runtimes for ONNX files are auto, opencv and libtorch");
}

ExportedRuntime open_exported_runtime(const ExportedFile& f, OnnxRuntimeChoice choice, const std::string& option) {
  if (f.nms) {
    throw InvalidInput(option + " " + f.path + " was exported with --nms: no runtime here runs its NonMaxSuppression "
                       "(OpenCV 4.6's dnn has none); run it with " + elsewhere(f) +
                       ", or export without --nms to validate or predict with it here");
  }
  ExportedModelShape shape;
  shape.head = ExportedModel::head_of(f.task, f.nc, f.masks);
  if (f.stride != 32) shape.head.strides = {f.stride};
  std::string what = f.description.empty() ? "ONNX" : f.description;
  ExportedRuntime out;

  std::string opencv_refusal;
#ifdef YOLOFLOW_WITH_OPENCV_DNN
  if (choice != OnnxRuntimeChoice::LibTorch) {
    // OpenCV evaluates shapes once, when it reads the file: a --dynamic file's sizes are filled in.
    onnx::ModelProto fixed = *f.model;
    const std::string input = input_name(fixed);
    const std::int64_t batch = f.batch > 0 ? f.batch : 1;
    for (auto& v : *fixed.mutable_graph()->mutable_input()) {
      if (v.name() != input) continue;
      auto* dims = v.mutable_type()->mutable_tensor_type()->mutable_shape();
      const std::int64_t values[4] = {batch, 3, f.height, f.width};
      for (int k = 0; k < dims->dim_size() && k < 4; ++k) dims->mutable_dim(k)->set_dim_value(values[k]);
    }
    std::string bytes;
    fixed.SerializeToString(&bytes);
    // OpenCV logs its refusals on stderr before it throws; the reason is reported once, below.
    const auto level = cv::utils::logging::setLogLevel(cv::utils::logging::LOG_LEVEL_SILENT);
    try {
      std::vector<std::string> outputs;
      for (const auto& o : fixed.graph().output()) outputs.push_back(o.name());
      auto runner = std::make_unique<OpenCvRunner>(bytes, input, outputs);
      // One forward pass proves OpenCV runs the file (some refusals come only then).
      runner->run(torch::zeros({batch, 3, f.height, f.width}));
      cv::utils::logging::setLogLevel(level);
      shape.batch = batch;
      shape.height = f.height;
      shape.width = f.width;
      shape.architecture = what + " (ONNX " + f.variant() + ")";
      out.model = std::make_unique<ExportedModel>(std::move(runner), shape);
      out.runtime = std::string("OpenCV ") + CV_VERSION + " dnn";
      return out;
    } catch (const cv::Exception& e) {
      cv::utils::logging::setLogLevel(level);
      opencv_refusal = opencv_reason(e);
    }
  }
  if (choice == OnnxRuntimeChoice::OpenCv) {
    throw InvalidInput(option + " " + f.path + " (" + f.variant() + "): OpenCV " + CV_VERSION +
                       "'s dnn cannot run it (" + opencv_refusal + "); run it with " + elsewhere(f) +
                       ", or here with --runtime libtorch");
  }
#else
  if (choice == OnnxRuntimeChoice::OpenCv) {
    throw InvalidInput(option + ": this yoloflow was built without OpenCV's dnn module; use --runtime libtorch");
  }
#endif
  try {
    auto runner = std::make_unique<EvaluatorRunner>(*f.model);
    shape.batch = f.batch;
    shape.height = f.dynamic ? 0 : f.height;
    shape.width = f.dynamic ? 0 : f.width;
    shape.architecture = what + " (ONNX " + f.variant() + ")";
    out.model = std::make_unique<ExportedModel>(std::move(runner), shape);
  } catch (const Error& e) {
    throw InvalidInput(option + " " + f.path + ": " + e.what() + "; run it with " + elsewhere(f));
  }
  out.runtime = "yoloflow's LibTorch evaluator of the ONNX operators (each node as the ONNX specification defines it" +
                std::string(f.int8 ? ": quantize, dequantize, then the float operator" : "") +
                (f.half ? "; float16 values between nodes, float32 arithmetic within them" : "") + ")";
  if (!opencv_refusal.empty()) {
    const std::string what_fails = f.half ? "it reads no float16 tensors; " : f.int8 ? "it does not read the int8 QDQ nodes; " : "";
    out.reason = std::string("OpenCV ") +
#ifdef YOLOFLOW_WITH_OPENCV_DNN
                 CV_VERSION +
#endif
                 "'s dnn cannot run this file (" + what_fails + opencv_refusal + ")";
  }
  return out;
}

LoadedCheckpointModel as_loaded_model(ExportedRuntime runtime, const ExportedFile& file) {
  LoadedCheckpointModel out;
  out.model = std::move(runtime.model);
  out.described.names = file.names;
  out.described.origin = file.path;
  out.weights_kind = "ONNX " + file.variant() + " via " +
                     (runtime.runtime.rfind("OpenCV", 0) == 0 ? runtime.runtime : std::string("the LibTorch evaluator"));
  out.about["format"] = "onnx";
  return out;
}

}  // namespace yoloflow::core
