#include "training/export/qdq_quantizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <torch/torch.h>

#include "training/export/onnx_torch_evaluator.h"
#include "yoloflow/error.h"

namespace yoloflow::core {
namespace {

onnx::TensorProto make_tensor(const std::string& name, int type, const std::vector<std::int64_t>& dims,
                              const void* data, std::size_t bytes) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(type);
  for (auto d : dims) t.add_dims(d);
  t.set_raw_data(std::string(static_cast<const char*>(data), bytes));
  return t;
}

onnx::NodeProto make_node(const std::string& op, const std::string& name, const std::vector<std::string>& inputs,
                          const std::string& output, int axis = -1) {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_name(name);
  for (const auto& i : inputs) n.add_input(i);
  n.add_output(output);
  if (axis >= 0) {
    auto* a = n.add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(axis);
  }
  return n;
}

}  // namespace

std::map<std::string, std::string> conv_inputs(const onnx::GraphProto& graph) {
  std::map<std::string, std::string> out;
  for (const auto& n : graph.node()) {
    if (n.op_type() == "Conv" && n.input_size() >= 2) out[n.input(1)] = n.input(0);
  }
  return out;
}

QdqReport insert_qdq(onnx::ModelProto& model, const std::map<std::string, float>& activation_scale,
                     const std::set<std::string>& keep_float) {
  auto& g = *model.mutable_graph();
  std::map<std::string, int> initializer_index;
  for (int k = 0; k < g.initializer_size(); ++k) initializer_index[g.initializer(k).name()] = k;
  std::map<std::string, int> reads;  // how many node inputs read each value
  for (const auto& n : g.node()) {
    for (const auto& i : n.input()) ++reads[i];
  }

  QdqReport report;
  std::vector<onnx::NodeProto> nodes;
  std::vector<onnx::TensorProto> added;
  std::set<std::string> dropped;          // float weights no node reads any more
  std::map<std::string, std::string> dq;  // activation -> its dequantized copy
  for (const auto& original : g.node()) {
    onnx::NodeProto n = original;
    if (n.op_type() != "Conv" || n.input_size() < 2) {
      nodes.push_back(std::move(n));
      continue;
    }
    const std::string x = n.input(0), w = n.input(1);
    if (keep_float.count(w) != 0) {
      if (std::find(report.kept_float.begin(), report.kept_float.end(), w) == report.kept_float.end()) {
        report.kept_float.push_back(w);
      }
      nodes.push_back(std::move(n));
      continue;
    }
    const auto scale_it = activation_scale.find(w);
    if (scale_it == activation_scale.end() || !(scale_it->second > 0) || !std::isfinite(scale_it->second)) {
      throw Error("int8: no calibrated range for the input of the convolution of '" + w + "'");
    }
    const auto wi = initializer_index.find(w);
    if (wi == initializer_index.end() || g.initializer(wi->second).data_type() != onnx::TensorProto::FLOAT) {
      throw Error("int8: the weight '" + w + "' of a convolution is not a float32 initializer");
    }

    // The activation: one Q/DQ pair per tensor, made where its first convolution reads it.
    if (dq.count(x) == 0) {
      const float s = scale_it->second;
      const std::int8_t zero = 0;
      const std::string base = x + "_int8";
      added.push_back(make_tensor(base + "_scale", onnx::TensorProto::FLOAT, {}, &s, sizeof s));
      added.push_back(make_tensor(base + "_zero_point", onnx::TensorProto::INT8, {}, &zero, 1));
      nodes.push_back(make_node("QuantizeLinear", base + "_QuantizeLinear", {x, base + "_scale", base + "_zero_point"},
                                base + "_quantized"));
      nodes.push_back(make_node("DequantizeLinear", base + "_DequantizeLinear",
                                {base + "_quantized", base + "_scale", base + "_zero_point"}, base + "_dequantized"));
      dq[x] = base + "_dequantized";
    }
    n.set_input(0, dq[x]);

    // The weight: int8 per output channel, symmetric in [-127, 127] (TensorRT's range).
    const torch::Tensor wf = onnx_tensor_to_torch(g.initializer(wi->second));
    const auto out_channels = wf.size(0);
    const auto amax = wf.abs().reshape({out_channels, -1}).amax(1);
    const auto scales = torch::where(amax > 0, amax / 127.0, torch::ones_like(amax)).to(torch::kFloat).contiguous();
    const auto shape = std::vector<std::int64_t>{out_channels, 1, 1, 1};
    const auto q = torch::clamp(torch::round(wf / scales.reshape(shape)), -127, 127).to(torch::kChar).contiguous();
    const auto zeros = torch::zeros({out_channels}, torch::kChar);
    const std::vector<std::int64_t> dims(wf.sizes().begin(), wf.sizes().end());
    added.push_back(make_tensor(w + "_quantized", onnx::TensorProto::INT8, dims, q.data_ptr(), static_cast<std::size_t>(q.numel())));
    added.push_back(make_tensor(w + "_scale", onnx::TensorProto::FLOAT, {out_channels}, scales.data_ptr(),
                                static_cast<std::size_t>(out_channels) * 4));
    added.push_back(make_tensor(w + "_zero_point", onnx::TensorProto::INT8, {out_channels}, zeros.data_ptr(),
                                static_cast<std::size_t>(out_channels)));
    nodes.push_back(make_node("DequantizeLinear", w + "_DequantizeLinear",
                              {w + "_quantized", w + "_scale", w + "_zero_point"}, w + "_dequantized", 0));
    n.set_input(1, w + "_dequantized");
    if (--reads[w] == 0) dropped.insert(w);
    nodes.push_back(std::move(n));
    ++report.quantized;
  }

  g.clear_node();
  for (auto& n : nodes) *g.add_node() = std::move(n);
  std::vector<onnx::TensorProto> kept;
  for (const auto& t : g.initializer()) {
    if (dropped.count(t.name()) == 0) kept.push_back(t);
  }
  g.clear_initializer();
  for (auto& t : kept) *g.add_initializer() = std::move(t);
  for (auto& t : added) *g.add_initializer() = std::move(t);
  return report;
}

}  // namespace yoloflow::core
