#include "training/export/exported_validation.h"

#include <algorithm>

#include "training/checkpoint/checkpoint_model.h"
#include "training/export/exported_runtime.h"
#include "yoloflow/error.h"
#include "yoloflow/log.h"

namespace yoloflow::core {

ExportedValidationReport validate_exported(const Registry& registry, WeightsValidationRequest r,
                                           OnnxRuntimeChoice choice) {
  const ExportedFile f = read_exported_file(r.weights, "--weights");
  const int size = static_cast<int>(std::max(f.height, f.width));
  if (r.imgsz > 0 && r.imgsz != size && !f.dynamic) {
    throw InvalidInput("--imgsz " + std::to_string(r.imgsz) + ": " + r.weights + " was exported at " +
                       std::to_string(f.height) + "x" + std::to_string(f.width) +
                       "; leave --imgsz out, or export again with --imgsz " + std::to_string(r.imgsz));
  }
  if (!r.device.empty() && r.device != "cpu") {
    throw InvalidInput("--device " + r.device + ": ONNX files run on the CPU here (OpenCV's dnn, the LibTorch "
                       "evaluator); on a GPU run them with ONNX Runtime or TensorRT");
  }
  const int h = static_cast<int>(f.dynamic && r.imgsz > 0 ? r.imgsz : f.height);
  const int w = static_cast<int>(f.dynamic && r.imgsz > 0 ? r.imgsz : f.width);
  ExportedFile sized = f;
  sized.height = h;
  sized.width = w;
  ExportedRuntime rt = open_exported_runtime(sized, choice, "--weights");
  r.device = "cpu";
  r.imgsz = std::max(h, w);
  r.rect = false;  // a fixed input: every image letterboxed to it, as Ultralytics validates exported files
  ExportedValidationReport out;
  out.runtime = rt.runtime;
  out.reason = rt.reason;
  out.variant = f.variant();
  CheckpointModel described;  // no pipeline: the data is read as train-defaults.json reads it
  described.names = f.names;
  // Its task's evaluator and mask targets (task-components.json), as for an Ultralytics checkpoint.
  described.spec = {{"params", {{"task", f.task}}}};
  const std::string description =
      rt.model->architecture() + " of " + r.weights + " via " + rt.runtime + ", " + std::to_string(h) + "x" +
      std::to_string(w) + (f.batch > 0 ? ", batch " + std::to_string(f.batch) : std::string(", dynamic"));
  out.report = validate_loaded_model(registry, r, *rt.model, described, description, h, w);
  return out;
}

}  // namespace yoloflow::core
