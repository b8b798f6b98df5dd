#pragma once
// An ONNX graph evaluated node by node with LibTorch, each node as the ONNX operator's text
// defines it: what runs an exported file where no runtime on the machine can (OpenCV 4.6's
// dnn reads neither float16 tensors nor per-channel DequantizeLinear), and what watches the
// activations calibration measures. Covers the operators `yoloflow export` writes, with or
// without --int8 (QuantizeLinear, DequantizeLinear) and --half, but not NonMaxSuppression.
//
// Arithmetic: float32. In a float16 file every node's float16 output is rounded to float16,
// so values between nodes are the file's; inside a node (a convolution's sums) the arithmetic
// is float32, as GPU runtimes accumulate. Quantize and dequantize are exact: round half to
// even, saturate, (q - zero_point) * scale.
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>
#include <torch/torch.h>

#include "training/export/onnx_torch_ops.h"

namespace yoloflow::core {

class OnnxTorchEvaluator {
 public:
  // Checks that every node's operator is covered; throws Error naming the first that is not.
  explicit OnnxTorchEvaluator(const onnx::ModelProto& model);

  // Called with a value's name and tensor as soon as it is computed (only for watched names).
  using Observer = std::function<void(const std::string& name, const torch::Tensor& value)>;
  void watch(std::set<std::string> names, Observer observer);

  // `images`: (B, 3, H, W) float32 on the CPU. Returns the graph's first output as float32.
  torch::Tensor run(const torch::Tensor& images) { return run_all(images).front(); }
  // Every output of the graph, in its order, as float32.
  std::vector<torch::Tensor> run_all(const torch::Tensor& images);

  const std::string& input_name() const { return input_; }
  bool float16() const { return half_input_; }

 private:
  std::vector<OnnxNode> nodes_;  // those left to compute on each run, in the file's order
  std::map<std::string, torch::Tensor> initializers_;
  std::set<std::string> half_;       // values stored as float16 in the file (rounded between nodes)
  std::map<std::string, int> uses_;  // how many node inputs read each value: freed after its last use
  std::string input_;
  std::vector<std::string> outputs_;
  bool half_input_ = false;
  std::set<std::string> watched_;
  Observer observer_;
};

}  // namespace yoloflow::core
