#include "training/export/exported_prediction.h"

#include <algorithm>

#include "training/export/exported_runtime.h"
#include "yoloflow/error.h"

namespace yoloflow::core {

ExportedPredictor exported_predictor(const Registry& registry, const std::string& path, PredictOptions options,
                                     OnnxRuntimeChoice choice) {
  const std::string option = options.option_prefix + "weights";
  ExportedFile f = read_exported_file(path, option);
  const int size = static_cast<int>(std::max(f.height, f.width));
  if (options.imgsz > 0 && options.imgsz != size && !f.dynamic) {
    throw InvalidInput(options.option_prefix + "imgsz " + std::to_string(options.imgsz) + ": " + path +
                       " was exported at " + std::to_string(f.height) + "x" + std::to_string(f.width) +
                       "; leave --imgsz out, or export again with --imgsz " + std::to_string(options.imgsz));
  }
  if (!options.device.empty() && options.device != "cpu") {
    throw InvalidInput(options.option_prefix + "device " + options.device +
                       ": ONNX files run on the CPU here (OpenCV's dnn, the LibTorch evaluator); on a GPU run them "
                       "with ONNX Runtime or TensorRT");
  }
  if (f.dynamic && options.imgsz > 0) f.height = f.width = options.imgsz;
  options.imgsz = static_cast<int>(std::max(f.height, f.width));
  options.device = "cpu";
  ExportedRuntime rt = open_exported_runtime(f, choice, option);
  ExportedPredictor out;
  out.runtime = rt.runtime;
  out.reason = rt.reason;
  out.predictor = std::make_unique<Predictor>(
      registry, std::make_unique<LoadedCheckpointModel>(as_loaded_model(std::move(rt), f)), options);
  return out;
}

}  // namespace yoloflow::core
