#pragma once
// `yoloflow val --weights model.onnx`: an exported file validated as trained weights are
// (weights_validation.h), through the runtime that runs it here (exported_runtime.h). As
// Ultralytics validates exported files: every image letterboxed to the file's input size
// (square batches), the file's imgsz, names and stride from its metadata, on the CPU.
#include <string>

#include "training/eval/weights_validation.h"
#include "training/export/onnx_runtime_choice.h"

namespace yoloflow::core {

struct ExportedValidationReport {
  WeightsValidationReport report;
  std::string runtime;  // what ran it
  std::string reason;   // why that runtime ("" when OpenCV's dnn ran it)
  std::string variant;  // "float32", "int8 QDQ", ...
};

// `request.weights` names the .onnx file. Throws InvalidInput in one line when the file cannot
// run here (exported_runtime.h) or the request does not fit it (--imgsz other than the file's,
// --device cuda).
ExportedValidationReport validate_exported(const Registry& registry, WeightsValidationRequest request,
                                           OnnxRuntimeChoice runtime);

}  // namespace yoloflow::core
