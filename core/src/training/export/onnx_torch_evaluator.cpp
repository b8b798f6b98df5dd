// The graph walk: nodes in the file's order, each value freed after its last reader, float16
// values rounded between nodes (the operators themselves are onnx_torch_ops.h). Nodes whose
// inputs are all constants (the dequantized weights of an int8 file, Constant nodes) are
// computed once, when the graph is read, so a run costs what the float network costs plus the
// activations' quantization.
#include "training/export/onnx_torch_evaluator.h"

#include <algorithm>

#include "yoloflow/error.h"

namespace yoloflow::core {

OnnxTorchEvaluator::OnnxTorchEvaluator(const onnx::ModelProto& model) {
  torch::NoGradGuard no_grad;
  const auto& g = model.graph();
  for (const auto& t : g.initializer()) {
    initializers_[t.name()] = onnx_tensor_to_torch(t);
    if (t.data_type() == onnx::TensorProto::FLOAT16) half_.insert(t.name());
  }
  std::set<std::string> known;
  for (const auto& [name, _] : initializers_) known.insert(name);
  for (const auto& in : g.input()) {
    if (known.count(in.name()) != 0) continue;  // an initializer listed as an input (older files)
    if (!input_.empty()) throw Error("the ONNX graph has more than one input (" + input_ + ", " + in.name() + ")");
    input_ = in.name();
    half_input_ = in.type().tensor_type().elem_type() == onnx::TensorProto::FLOAT16;
    if (half_input_) half_.insert(input_);
  }
  if (input_.empty()) throw Error("the ONNX graph has no input");
  if (g.output_size() < 1) throw Error("the ONNX graph has no output");
  for (const auto& o : g.output()) outputs_.push_back(o.name());
  for (const auto& np : g.node()) {
    if (!np.domain().empty() && np.domain() != "ai.onnx") {
      throw Error("the ONNX graph uses the operator " + np.domain() + "." + np.op_type() +
                  ", which the ONNX evaluator does not cover");
    }
    if (!onnx_op_covered(np.op_type())) {
      throw Error("the ONNX graph uses the operator " + np.op_type() + ", which the ONNX evaluator does not cover");
    }
    OnnxNode n;
    n.op = np.op_type();
    n.inputs.assign(np.input().begin(), np.input().end());
    n.outputs.assign(np.output().begin(), np.output().end());
    for (const auto& a : np.attribute()) n.attrs[a.name()] = a;
    bool constant = true;
    for (const auto& i : n.inputs) constant = constant && (i.empty() || initializers_.count(i) != 0);
    if (constant) {
      // Folded now: its inputs never change.
      std::vector<torch::Tensor> in;
      for (const auto& i : n.inputs) in.push_back(i.empty() ? torch::Tensor() : initializers_.at(i));
      bool half = false;
      for (const auto& i : n.inputs) half = half || half_.count(i) != 0;
      if (n.op == "Cast") half = casts_to_float16(n);
      const auto out = evaluate_onnx_node(n, in);
      for (std::size_t k = 0; k < n.outputs.size() && k < out.size(); ++k) {
        auto v = out[k];
        if (half && v.is_floating_point()) {
          v = v.to(torch::kHalf).to(torch::kFloat);
          half_.insert(n.outputs[k]);
        }
        initializers_[n.outputs[k]] = v;
      }
      continue;
    }
    for (const auto& i : n.inputs) {
      if (!i.empty()) ++uses_[i];
    }
    nodes_.push_back(std::move(n));
  }
  // Which computed values are float16 in the file: those of any float16 input, or a Cast to it.
  for (const auto& n : nodes_) {
    bool half = false;
    if (n.op == "Cast") {
      half = casts_to_float16(n);
    } else if (n.op != "Shape" && n.op != "QuantizeLinear") {
      for (const auto& i : n.inputs) half = half || half_.count(i) != 0;
    }
    if (half) {
      for (const auto& o : n.outputs) half_.insert(o);
    }
  }
}

void OnnxTorchEvaluator::watch(std::set<std::string> names, Observer observer) {
  watched_ = std::move(names);
  observer_ = std::move(observer);
}

std::vector<torch::Tensor> OnnxTorchEvaluator::run_all(const torch::Tensor& images) {
  torch::NoGradGuard no_grad;
  std::map<std::string, torch::Tensor> values;
  auto x = images.to(torch::kFloat).contiguous();
  if (half_input_) x = x.to(torch::kHalf).to(torch::kFloat);
  values[input_] = x;
  if (watched_.count(input_) != 0 && observer_) observer_(input_, x);
  std::map<std::string, int> left = uses_;
  auto lookup = [&](const std::string& name) -> torch::Tensor {
    if (name.empty()) return {};
    if (const auto it = values.find(name); it != values.end()) return it->second;
    if (const auto it = initializers_.find(name); it != initializers_.end()) return it->second;
    throw Error("the ONNX graph reads the value '" + name + "' before any node computes it");
  };
  for (const auto& n : nodes_) {
    std::vector<torch::Tensor> in;
    in.reserve(n.inputs.size());
    for (const auto& i : n.inputs) in.push_back(lookup(i));
    std::vector<torch::Tensor> out;
    try {
      out = evaluate_onnx_node(n, in);
    } catch (const c10::Error& e) {
      throw Error("the ONNX evaluator failed at a " + n.op + " node (output " + n.outputs.at(0) +
                  "): " + e.what_without_backtrace());
    }
    for (const auto& i : n.inputs) {
      if (!i.empty() && --left[i] == 0 && std::find(outputs_.begin(), outputs_.end(), i) == outputs_.end()) {
        values.erase(i);
      }
    }
    for (std::size_t k = 0; k < n.outputs.size() && k < out.size(); ++k) {
      auto v = out[k];
      if (v.is_floating_point() && half_.count(n.outputs[k]) != 0) v = v.to(torch::kHalf).to(torch::kFloat);
      if (observer_ && watched_.count(n.outputs[k]) != 0) observer_(n.outputs[k], v);
      values[n.outputs[k]] = std::move(v);
    }
  }
  std::vector<torch::Tensor> out;
  for (const auto& o : outputs_) out.push_back(lookup(o).to(torch::kFloat));
  return out;
}

}  // namespace yoloflow::core
