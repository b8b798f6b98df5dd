#pragma once
// `yoloflow export --format onnx`: a model plugin's graph (Model::export_graph) written as an
// ONNX file with libonnx, checked by its checker and shape inference, with the metadata
// Ultralytics' ONNX export writes, so tools that read those files read ours.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "training/export/nms_settings.h"
#include "yoloflow/model.h"

namespace yoloflow::core {

struct OnnxExportOptions {
  std::int64_t batch = 1;
  std::int64_t height = 640, width = 640;
  bool dynamic = false;  // symbolic batch, height and width
  bool half = false;     // float16 weights, input and output
  int opset = 17;
  bool nms = false;
  NmsSettings nms_settings;
  bool int8 = false;  // recorded in the metadata's args; int8_export.h quantizes the graph
  std::vector<std::string> names;  // class names, one per class of the head
  std::string description;         // where the weights came from
};

struct OnnxExportReport {
  std::string path;
  std::vector<std::int64_t> output_shape;  // output0's; -1 for a symbolic dimension
  // The outputs after output0 (a segmentation model's prototypes): graph name and dimensions.
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> more_outputs;
  std::int64_t nodes = 0, initializers = 0, bytes = 0;
};

// Opsets the written ops are valid in.
constexpr int kMinOnnxOpset = 13;
constexpr int kMaxOnnxOpset = 17;

// `model` in eval mode, on any device (weights are copied to the CPU). Throws InvalidInput for
// unusable options, Error when the model cannot be exported or the graph fails the checker.
// Writes `path` atomically.
OnnxExportReport export_onnx(Model& model, const OnnxExportOptions& options, const std::string& path);

// Python's repr of a str (how Ultralytics' metadata quotes class names).
std::string python_repr(const std::string& s);

}  // namespace yoloflow::core
