#include "training/export/int8_export.h"

#include <algorithm>
#include <map>

#include "training/checkpoint/checkpoint_model.h"
#include "training/eval/validation_pipeline.h"
#include "training/eval/weights_validation.h"
#include "training/export/exported_model.h"
#include "training/export/onnx_model_build.h"
#include "training/export/onnx_torch_evaluator.h"
#include "training/export/qdq_quantizer.h"
#include "yoloflow/error.h"
#include "yoloflow/log.h"

namespace yoloflow::core {
namespace {

class EvaluatorRef final : public OnnxRunner {
 public:
  explicit EvaluatorRef(OnnxTorchEvaluator& e) : e_(e) {}
  std::vector<torch::Tensor> run(const torch::Tensor& images) override { return e_.run_all(images); }

 private:
  OnnxTorchEvaluator& e_;
};

bool is_dfl(const std::string& weight) {
  const std::string tail = ".dfl.conv.weight";
  return weight.size() >= tail.size() && weight.compare(weight.size() - tail.size(), tail.size(), tail) == 0;
}

// The calibration images through the validation pipeline (its reader, letterbox and batches):
// square letterbox at the file's input, `model` (the watched evaluator) handed every batch.
void run_images(const Registry& registry, const CheckpointModel& described, const Int8Calibration& c,
                         const OnnxExportOptions& o, Model& model, std::size_t* images) {
  ValidationStages stages = validation_stages(registry, described, c.data, c.split);
  stages.nms = {{"conf", 0.001}, {"iou", 0.7}, {"max_det", 300}};
  ValidationOptions vo;
  vo.imgsz = static_cast<int>(std::max(o.height, o.width));
  vo.height = static_cast<int>(o.height);
  vo.width = static_cast<int>(o.width);
  vo.batch = c.batch;
  vo.rect = false;
  vo.fraction = c.fraction;
  vo.limit = c.images;
  StageContext ctx;
  ctx.node = "--data";
  ctx.imgsz = vo.imgsz;
  ctx.device = "cpu";
  ValidationPipeline validation(registry, stages, vo, ctx, "int8 calibration");
  if (static_cast<int>(validation.names().size()) != model.head().nc) {
    throw InvalidInput("--data " + c.data + " names " + std::to_string(validation.names().size()) +
                       " classes, but the weights detect " + std::to_string(model.head().nc) +
                       ": calibrate on the dataset the weights were trained for");
  }
  if (validation.size() == 0) throw InvalidInput("--data " + c.data + ": split '" + c.split + "' has no images to calibrate with");
  const auto result = validation.run(model, nullptr, nullptr, torch::Device(torch::kCPU));
  *images = static_cast<std::size_t>(result.evaluation.images);
  if (*images == 0) {
    throw InvalidInput("--data " + c.data + ": none of the calibration images of split '" + c.split +
                       "' could be read (--fraction " + std::to_string(c.fraction) + ")");
  }
}

}  // namespace

Int8ExportReport export_onnx_int8(const Registry& registry, Model& model, const CheckpointModel& described,
                                  OnnxExportOptions o, const Int8Calibration& c, const std::string& path) {
  if (o.half) throw InvalidInput("--int8 and --half exclude each other");
  if (c.data.empty()) throw InvalidInput("--int8 needs --data DATA.yaml: the images its activation ranges are calibrated on");
  if (!(c.fraction > 0.0 && c.fraction <= 1.0)) {
    throw InvalidInput("--fraction " + std::to_string(c.fraction) + ": give a fraction of the images in (0, 1]");
  }
  const auto head = model.head();
  ExportedModelShape shape;
  shape.head = head;
  shape.architecture = model.architecture();
  shape.height = o.height;
  shape.width = o.width;

  // The float graph the ranges are measured on: fixed size, no NMS (the evaluator has none).
  OnnxExportOptions fo = o;
  fo.nms = false;
  fo.dynamic = false;
  fo.batch = 1;
  const onnx::ModelProto float_graph = build_onnx_model(model, fo, nullptr);
  const auto inputs = conv_inputs(float_graph.graph());
  std::set<std::string> keep;
  for (const auto& [weight, _] : inputs) {
    if (is_dfl(weight)) keep.insert(weight);
  }
  for (const auto& prefix : c.keep_float) {
    bool any = false;
    for (const auto& [weight, _] : inputs) {
      if (weight.rfind(prefix, 0) == 0) {
        keep.insert(weight);
        any = true;
      }
    }
    if (!any) throw InvalidInput("--int8-float " + prefix + ": no convolution's weight is named so (e.g. model.23.cv2.0.2.weight)");
  }
  std::set<std::string> watched;
  for (const auto& [weight, x] : inputs) {
    if (keep.count(weight) == 0) watched.insert(x);
  }
  std::map<std::string, ActivationHistogram> histograms;
  OnnxTorchEvaluator float_eval(float_graph);
  float_eval.watch(watched, [&](const std::string& name, const torch::Tensor& v) { histograms[name].add(v); });
  ExportedModel float_model(std::make_unique<EvaluatorRef>(float_eval), shape);
  Int8ExportReport report;
  YF_LOG_INFO("int8: calibrating " << watched.size() << " activations on the images of " << c.data << " split '" << c.split
                                    << "' (" << calibration_method_name(c.method) << ")");
  run_images(registry, described, c, o, float_model, &report.calibration_images);

  std::map<std::string, float> scales;
  for (const auto& [weight, x] : inputs) {
    if (keep.count(weight) != 0) continue;
    const auto it = histograms.find(x);
    if (it == histograms.end()) throw Error("int8: the calibration never reached the input of the convolution of " + weight);
    scales[weight] = static_cast<float>(it->second.threshold(c.method, c.percentile) / 127.0);
  }

  o.int8 = true;
  std::vector<std::int64_t> output_shape;
  onnx::ModelProto m = build_onnx_model(model, o, &output_shape);
  const QdqReport q = insert_qdq(m, scales, keep);
  report.quantized = q.quantized;
  report.kept_float = q.kept_float;
  report.file = check_and_write_onnx(m, output_shape, path);

  return report;
}

}  // namespace yoloflow::core
