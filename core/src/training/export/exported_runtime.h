#pragma once
// Which runtime runs an exported ONNX file here, and the Model that runs it (exported_model.h):
// - OpenCV's dnn module (4.6 on Debian 12) where it reads the file: float32 files, fixed or
//   --dynamic (its input sizes filled in first, as OpenCV evaluates shapes once);
// - else yoloflow's LibTorch evaluator of the ONNX operators (onnx_torch_evaluator.h), which
//   computes each node as the ONNX specification defines it: float16 files (OpenCV 4.6 reads
//   no float16 tensors) and int8 QDQ files (it refuses per-channel DequantizeLinear).
// A --nms file runs in neither (NonMaxSuppression): it is refused in one line naming the
// runtimes that run it.
#include <memory>
#include <string>

#include "training/checkpoint/checkpoint_model.h"
#include "training/export/exported_file.h"
#include "training/export/onnx_runtime_choice.h"
#include "yoloflow/model.h"

namespace yoloflow::core {

struct ExportedRuntime {
  std::unique_ptr<Model> model;
  std::string runtime;  // "OpenCV 4.6.0 dnn", "LibTorch evaluator of the ONNX operators"
  std::string reason;   // why this runtime ("" for OpenCV on a float32 file)
};

// `file` as read_exported_file gave it; `option` names it in messages ("--weights").
// Throws InvalidInput in one line when the file cannot run here (an --nms file; --runtime
// opencv on a file OpenCV refuses), naming where it runs.
ExportedRuntime open_exported_runtime(const ExportedFile& file, OnnxRuntimeChoice choice, const std::string& option);

// The runtime's model as the consumers of trained weights take one (predictor.h): the file's
// class names, and "ONNX <variant> via <runtime>" as its kind of weights.
LoadedCheckpointModel as_loaded_model(ExportedRuntime runtime, const ExportedFile& file);

}  // namespace yoloflow::core
