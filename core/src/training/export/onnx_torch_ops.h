#pragma once
// The ONNX operators the evaluator (onnx_torch_evaluator.h) covers, each computed with
// LibTorch as the operator's text in the ONNX specification defines it: one node's outputs from
// its inputs and attributes, with no knowledge of the graph around it. Also how an ONNX tensor
// becomes a torch::Tensor, which initializers and Constant nodes share.
#include <map>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>
#include <torch/torch.h>

namespace yoloflow::core {

// One node of an ONNX graph as the evaluator keeps it.
struct OnnxNode {
  std::string op;
  std::vector<std::string> inputs, outputs;
  std::map<std::string, onnx::AttributeProto> attrs;  // copies: the model may go once read
};

// Whether evaluate_onnx_node covers the operator `op` (of the default domain).
bool onnx_op_covered(const std::string& op);

// Whether `n` is a Cast to float16: its output is float16 in the file.
bool casts_to_float16(const OnnxNode& n);

// The outputs of `n` for its inputs `in`, in order (an undefined tensor for an omitted optional
// input). Throws Error for an operator or attribute outside what is covered; LibTorch throws
// c10::Error for inputs it refuses.
std::vector<torch::Tensor> evaluate_onnx_node(const OnnxNode& n, const std::vector<torch::Tensor>& in);

// An ONNX initializer (or Constant value) as a CPU tensor: float and float16 as float32, the
// integer types as themselves. Throws Error for other types.
torch::Tensor onnx_tensor_to_torch(const onnx::TensorProto& t);

}  // namespace yoloflow::core
