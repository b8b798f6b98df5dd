#pragma once
// A float32 ONNX graph turned into a QDQ graph: QuantizeLinear / DequantizeLinear pairs around
// its convolutions, the form ONNX Runtime and TensorRT read as an int8 model (each fuses a
// DequantizeLinear -> Conv <- DequantizeLinear pattern into an int8 convolution).
// - weights: int8, symmetric, one scale per output channel (DequantizeLinear with axis 0);
// - activations (each convolution's input): int8, symmetric, one scale per tensor, the
//   scales of activation_calibration.h; one pair per tensor, shared by the convolutions that
//   read it;
// - biases stay float32 (exact; TensorRT takes float biases, ONNX Runtime adds them in float).
// Convolutions named in `keep_float` (by their weight's initializer name) are left as they were.
#include <map>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace yoloflow::core {

struct QdqReport {
  int quantized = 0;                  // convolutions now reading int8 weights and activations
  std::vector<std::string> kept_float;  // weights of the convolutions left in float, each once
};

// `activation_scale`: per convolution weight name, the scale of that convolution's input.
// Throws Error when a convolution to quantize has no scale or its weight is not a float32
// initializer.
QdqReport insert_qdq(onnx::ModelProto& model, const std::map<std::string, float>& activation_scale,
                     const std::set<std::string>& keep_float);

// The convolutions of a graph: weight initializer name -> the name of the value it reads.
std::map<std::string, std::string> conv_inputs(const onnx::GraphProto& graph);

}  // namespace yoloflow::core
