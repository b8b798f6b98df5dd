#pragma once
// `yoloflow predict --weights model.onnx`: a Predictor (predictor.h) whose network is an
// exported file run by the runtime that runs it here (exported_runtime.h). The file's imgsz
// is the input size (a fixed-shape file takes no other); its names name the classes.
#include <memory>
#include <string>

#include "training/export/onnx_runtime_choice.h"
#include "training/predict/predictor.h"

namespace yoloflow::core {

struct ExportedPredictor {
  std::unique_ptr<Predictor> predictor;
  std::string runtime, reason;  // what runs it, and why that one ("" for OpenCV's dnn)
};

// Throws InvalidInput in one line when the file cannot run here or the options do not fit
// it (--imgsz other than the file's, --device cuda).
ExportedPredictor exported_predictor(const Registry& registry, const std::string& path, PredictOptions options,
                                     OnnxRuntimeChoice runtime);

}  // namespace yoloflow::core
