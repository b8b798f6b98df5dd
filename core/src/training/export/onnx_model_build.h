#pragma once
// The two halves of export_onnx (onnx_export.h), for what changes the graph in between (int8
// quantization, int8_export.h): the model with its metadata, and the checker, shape inference
// and atomic write. libonnx's types: included by the training library only.
#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "training/export/onnx_export.h"

namespace yoloflow::core {

// `output_shape` (may be null) receives the output's dimensions, -1 for a symbolic one.
onnx::ModelProto build_onnx_model(Model& model, const OnnxExportOptions& options,
                                  std::vector<std::int64_t>* output_shape);
OnnxExportReport check_and_write_onnx(onnx::ModelProto& model, const std::vector<std::int64_t>& output_shape,
                                      const std::string& path);

}  // namespace yoloflow::core
