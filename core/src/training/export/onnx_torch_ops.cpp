// Each ONNX operator by its specification, in LibTorch. Where yoloflow's exports use one form
// of an operator (Resize as nearest, asymmetric, floor; Slice with steps of 1), the others are
// refused by name rather than computed by a guess.
#include "training/export/onnx_torch_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include <ATen/ExpandUtils.h>

#include "yoloflow/error.h"

namespace yoloflow::core {
namespace {

using Attrs = std::map<std::string, onnx::AttributeProto>;

std::int64_t attr_int(const Attrs& a, const std::string& name, std::int64_t fallback) {
  const auto it = a.find(name);
  return it == a.end() ? fallback : it->second.i();
}

std::vector<std::int64_t> attr_ints(const Attrs& a, const std::string& name, std::vector<std::int64_t> fallback) {
  const auto it = a.find(name);
  if (it == a.end()) return fallback;
  return {it->second.ints().begin(), it->second.ints().end()};
}

std::string attr_string(const Attrs& a, const std::string& name, const std::string& fallback) {
  const auto it = a.find(name);
  return it == a.end() ? fallback : it->second.s();
}

std::vector<std::int64_t> to_ints(const torch::Tensor& t) {
  const auto c = t.to(torch::kLong).contiguous().reshape(-1);
  return {c.data_ptr<std::int64_t>(), c.data_ptr<std::int64_t>() + c.numel()};
}

std::int64_t norm_axis(std::int64_t axis, std::int64_t rank) { return axis < 0 ? axis + rank : axis; }

// Scale or zero point of a quantizer, shaped to broadcast along `axis` of a `rank`-D tensor
// (per channel), or as it is (per tensor: a scalar or one element).
torch::Tensor along_axis(const torch::Tensor& p, std::int64_t axis, std::int64_t rank) {
  if (p.dim() == 0 || p.numel() == 1) return p.reshape({});
  std::vector<std::int64_t> shape(static_cast<std::size_t>(rank), 1);
  shape[static_cast<std::size_t>(norm_axis(axis, rank))] = p.numel();
  return p.reshape(shape);
}

torch::ScalarType torch_type_of(int onnx_type) {
  switch (onnx_type) {
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::DOUBLE: return torch::kFloat;
    case onnx::TensorProto::INT64: return torch::kLong;
    case onnx::TensorProto::INT32: return torch::kInt;
    case onnx::TensorProto::INT8: return torch::kChar;
    case onnx::TensorProto::UINT8: return torch::kByte;
    case onnx::TensorProto::BOOL: return torch::kBool;
    default: throw Error("the ONNX evaluator does not read tensors of ONNX type " + std::to_string(onnx_type));
  }
}

const std::set<std::string>& covered_ops() {
  // Every branch of evaluate_onnx_node, checked when a graph is read.
  static const std::set<std::string> ops{
      "Conv",     "ConvTranspose",  "MaxPool",          "Resize",  "Add",       "Sub",     "Mul",
      "Div",      "Sigmoid",        "MatMul",           "Softmax", "Concat",    "Split",   "Slice",
      "Reshape",  "Transpose",      "Shape",            "Gather",  "CumSum",    "Cast",    "Range",
      "Expand",   "Unsqueeze",      "Squeeze",          "Identity", "Constant", "QuantizeLinear",
      "DequantizeLinear", "Relu",   "Flatten"};
  return ops;
}

}  // namespace

bool onnx_op_covered(const std::string& op) { return covered_ops().count(op) != 0; }

bool casts_to_float16(const OnnxNode& n) {
  return n.op == "Cast" && attr_int(n.attrs, "to", 0) == onnx::TensorProto::FLOAT16;
}

torch::Tensor onnx_tensor_to_torch(const onnx::TensorProto& t) {
  std::vector<std::int64_t> dims(t.dims().begin(), t.dims().end());
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  auto from_raw = [&](torch::ScalarType type, std::size_t element) {
    if (t.raw_data().size() != static_cast<std::size_t>(n) * element) {
      throw Error("ONNX tensor '" + t.name() + "' holds " + std::to_string(t.raw_data().size()) + " bytes for " +
                  std::to_string(n) + " elements");
    }
    auto out = torch::empty(dims, type);
    if (n > 0) std::memcpy(out.data_ptr(), t.raw_data().data(), t.raw_data().size());
    return out;
  };
  const bool raw = t.has_raw_data();
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      if (raw) return from_raw(torch::kFloat, 4);
      return torch::tensor(std::vector<float>(t.float_data().begin(), t.float_data().end()), torch::kFloat).reshape(dims);
    case onnx::TensorProto::FLOAT16: {
      if (raw) return from_raw(torch::kHalf, 2).to(torch::kFloat);
      // Typed storage keeps each float16's bits in an int32.
      std::vector<std::int16_t> bits;
      for (auto v : t.int32_data()) bits.push_back(static_cast<std::int16_t>(v));
      auto h = torch::empty({static_cast<std::int64_t>(bits.size())}, torch::kHalf);
      if (!bits.empty()) std::memcpy(h.data_ptr(), bits.data(), bits.size() * 2);
      return h.to(torch::kFloat).reshape(dims);
    }
    case onnx::TensorProto::INT64:
      if (raw) return from_raw(torch::kLong, 8);
      return torch::tensor(std::vector<std::int64_t>(t.int64_data().begin(), t.int64_data().end()), torch::kLong)
          .reshape(dims);
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::BOOL: {
      const auto type = torch_type_of(t.data_type());
      const std::size_t element = t.data_type() == onnx::TensorProto::INT32 ? 4 : 1;
      if (raw) return from_raw(type, element);
      return torch::tensor(std::vector<std::int64_t>(t.int32_data().begin(), t.int32_data().end()), torch::kLong)
          .to(type)
          .reshape(dims);
    }
    case onnx::TensorProto::DOUBLE:
      if (raw) return from_raw(torch::kDouble, 8).to(torch::kFloat);
      return torch::tensor(std::vector<double>(t.double_data().begin(), t.double_data().end()), torch::kDouble)
          .to(torch::kFloat)
          .reshape(dims);
    default:
      throw Error("ONNX tensor '" + t.name() + "' has type " + std::to_string(t.data_type()) +
                  ", which the ONNX evaluator does not read");
  }
}

std::vector<torch::Tensor> evaluate_onnx_node(const OnnxNode& n, const std::vector<torch::Tensor>& in) {
  const auto& a = n.attrs;
  const std::string& op = n.op;
  auto input = [&](std::size_t k) -> const torch::Tensor& {
    static const torch::Tensor none;
    return k < in.size() ? in[k] : none;
  };
  if (op == "Conv") {
    const auto& w = input(1);
    const auto pads = attr_ints(a, "pads", {0, 0, 0, 0});
    auto x = input(0);
    std::vector<std::int64_t> pad{pads.at(0), pads.at(1)};
    if (pads.size() == 4 && (pads[0] != pads[2] || pads[1] != pads[3])) {
      x = torch::constant_pad_nd(x, {pads[1], pads[3], pads[0], pads[2]}, 0);
      pad = {0, 0};
    }
    return {torch::conv2d(x, w, input(2), attr_ints(a, "strides", {1, 1}), pad, attr_ints(a, "dilations", {1, 1}),
                          attr_int(a, "group", 1))};
  }
  if (op == "ConvTranspose") {
    const auto pads = attr_ints(a, "pads", {0, 0, 0, 0});
    if (pads.size() == 4 && (pads[0] != pads[2] || pads[1] != pads[3])) {
      throw Error("the ONNX evaluator covers ConvTranspose with equal pads at both ends only");
    }
    const auto output_padding = attr_ints(a, "output_padding", {});
    if (std::any_of(output_padding.begin(), output_padding.end(), [](std::int64_t v) { return v != 0; }) ||
        !attr_ints(a, "output_shape", {}).empty() ||
        attr_string(a, "auto_pad", "NOTSET") != "NOTSET") {
      throw Error("the ONNX evaluator covers ConvTranspose without output_padding, output_shape or auto_pad");
    }
    return {torch::conv_transpose2d(input(0), input(1), input(2), attr_ints(a, "strides", {1, 1}),
                                    {pads.at(0), pads.at(1)}, 0, attr_int(a, "group", 1),
                                    attr_ints(a, "dilations", {1, 1}))};
  }
  if (op == "MaxPool") {
    const auto pads = attr_ints(a, "pads", {0, 0, 0, 0});
    auto x = input(0);
    std::vector<std::int64_t> pad{pads.at(0), pads.at(1)};
    if (pads.size() == 4 && (pads[0] != pads[2] || pads[1] != pads[3])) {
      x = torch::constant_pad_nd(x, {pads[1], pads[3], pads[0], pads[2]}, -std::numeric_limits<float>::infinity());
      pad = {0, 0};
    }
    const auto k = attr_ints(a, "kernel_shape", {});
    return {torch::max_pool2d(x, k, attr_ints(a, "strides", {1, 1}), pad, attr_ints(a, "dilations", {1, 1}),
                              attr_int(a, "ceil_mode", 0) != 0)};
  }
  if (op == "Resize") {
    if (attr_string(a, "mode", "nearest") != "nearest" ||
        attr_string(a, "coordinate_transformation_mode", "half_pixel") != "asymmetric" ||
        attr_string(a, "nearest_mode", "round_prefer_floor") != "floor") {
      throw Error("the ONNX evaluator covers Resize only as nearest, asymmetric, floor (what yoloflow export writes)");
    }
    const auto& x = input(0);
    std::vector<std::int64_t> size;
    if (input(3).defined() && input(3).numel() == 4) {
      const auto s = to_ints(input(3));
      size = {s[2], s[3]};
    } else {
      const auto s = input(2).to(torch::kFloat).contiguous();
      const float* f = s.data_ptr<float>();
      size = {static_cast<std::int64_t>(std::floor(x.size(2) * f[2])), static_cast<std::int64_t>(std::floor(x.size(3) * f[3]))};
    }
    // PyTorch's nearest picks floor(out * in / size): ONNX's asymmetric floor for these sizes.
    return {torch::upsample_nearest2d(x, size)};
  }
  if (op == "Add") return {input(0) + input(1)};
  if (op == "Sub") return {input(0) - input(1)};
  if (op == "Mul") return {input(0) * input(1)};
  if (op == "Div") {
    if (!input(0).is_floating_point() && !input(1).is_floating_point()) return {torch::div(input(0), input(1), "trunc")};
    return {input(0) / input(1)};
  }
  if (op == "Sigmoid") return {torch::sigmoid(input(0))};
  if (op == "Relu") return {torch::relu(input(0))};
  if (op == "MatMul") return {torch::matmul(input(0), input(1))};
  if (op == "Softmax") return {torch::softmax(input(0), attr_int(a, "axis", -1))};
  if (op == "Concat") {
    std::vector<torch::Tensor> xs;
    for (const auto& t : in) {
      if (t.defined()) xs.push_back(t);
    }
    return {torch::cat(xs, attr_int(a, "axis", 0))};
  }
  if (op == "Split") {
    const auto& x = input(0);
    const auto axis = norm_axis(attr_int(a, "axis", 0), x.dim());
    std::vector<std::int64_t> sizes;
    if (input(1).defined()) {
      sizes = to_ints(input(1));
    } else {
      sizes = attr_ints(a, "split", {});
    }
    if (sizes.empty()) {
      const auto parts = static_cast<std::int64_t>(n.outputs.size());
      sizes.assign(static_cast<std::size_t>(parts), x.size(axis) / parts);
    }
    return torch::split_with_sizes(x, sizes, axis);
  }
  if (op == "Slice") {
    auto x = input(0);
    const auto starts = to_ints(input(1)), ends = to_ints(input(2));
    std::vector<std::int64_t> axes, steps;
    if (input(3).defined()) {
      axes = to_ints(input(3));
    } else {
      for (std::size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<std::int64_t>(k));
    }
    if (input(4).defined()) steps = to_ints(input(4));
    for (std::size_t k = 0; k < axes.size(); ++k) {
      const auto axis = norm_axis(axes[k], x.dim());
      const std::int64_t dim = x.size(axis);
      const std::int64_t step = steps.empty() ? 1 : steps[k];
      if (step != 1) throw Error("the ONNX evaluator covers Slice with steps of 1 only");
      auto clampi = [&](std::int64_t v) {
        if (v < 0) v += dim;
        return std::clamp<std::int64_t>(v, 0, dim);
      };
      const auto b = clampi(starts[k]), e = clampi(ends[k]);
      x = x.narrow(axis, b, std::max<std::int64_t>(0, e - b));
    }
    return {x};
  }
  if (op == "Reshape") {
    const auto& x = input(0);
    auto shape = to_ints(input(1));
    for (std::size_t k = 0; k < shape.size(); ++k) {
      if (shape[k] == 0 && attr_int(a, "allowzero", 0) == 0) shape[k] = x.size(static_cast<std::int64_t>(k));
    }
    return {x.reshape(shape)};
  }
  if (op == "Flatten") {
    const auto& x = input(0);
    const auto axis = norm_axis(attr_int(a, "axis", 1), x.dim());
    std::int64_t outer = 1;
    for (std::int64_t k = 0; k < axis; ++k) outer *= x.size(k);
    return {x.reshape({outer, -1})};
  }
  if (op == "Transpose") {
    const auto& x = input(0);
    auto perm = attr_ints(a, "perm", {});
    if (perm.empty()) {
      for (std::int64_t k = x.dim() - 1; k >= 0; --k) perm.push_back(k);
    }
    return {x.permute(perm).contiguous()};
  }
  if (op == "Shape") {
    const auto s = input(0).sizes();
    return {torch::tensor(std::vector<std::int64_t>(s.begin(), s.end()), torch::kLong)};
  }
  if (op == "Gather") {
    const auto& x = input(0);
    const auto axis = norm_axis(attr_int(a, "axis", 0), x.dim());
    auto idx = input(1).to(torch::kLong);
    idx = torch::where(idx < 0, idx + x.size(axis), idx);
    auto picked = torch::index_select(x, axis, idx.reshape(-1));
    std::vector<std::int64_t> shape(x.sizes().begin(), x.sizes().begin() + axis);
    for (auto d : idx.sizes()) shape.push_back(d);
    for (auto k = axis + 1; k < x.dim(); ++k) shape.push_back(x.size(k));
    return {picked.reshape(shape)};
  }
  if (op == "CumSum") {
    if (attr_int(a, "exclusive", 0) != 0 || attr_int(a, "reverse", 0) != 0) {
      throw Error("the ONNX evaluator covers CumSum without exclusive or reverse only");
    }
    return {torch::cumsum(input(0), to_ints(input(1)).at(0))};
  }
  if (op == "Cast") return {input(0).to(torch_type_of(static_cast<int>(attr_int(a, "to", onnx::TensorProto::FLOAT))))};
  if (op == "Range") {
    if (input(0).is_floating_point()) {
      return {torch::arange(input(0).item<double>(), input(1).item<double>(), input(2).item<double>(), torch::kFloat)};
    }
    return {torch::arange(input(0).item<std::int64_t>(), input(1).item<std::int64_t>(), input(2).item<std::int64_t>(),
                          torch::kLong)};
  }
  if (op == "Expand") {
    const auto& x = input(0);
    const auto shape = to_ints(input(1));
    // Bidirectional broadcast, as numpy's.
    const auto target = at::infer_size(x.sizes(), shape);
    return {x.expand(target).contiguous()};
  }
  if (op == "Unsqueeze") {
    auto x = input(0);
    auto axes = input(1).defined() ? to_ints(input(1)) : attr_ints(a, "axes", {});
    const auto rank = x.dim() + static_cast<std::int64_t>(axes.size());
    for (auto& ax : axes) ax = norm_axis(ax, rank);
    std::sort(axes.begin(), axes.end());
    for (auto ax : axes) x = x.unsqueeze(ax);
    return {x};
  }
  if (op == "Squeeze") {
    auto x = input(0);
    auto axes = input(1).defined() ? to_ints(input(1)) : attr_ints(a, "axes", {});
    if (axes.empty()) return {x.squeeze()};
    for (auto& ax : axes) ax = norm_axis(ax, x.dim());
    std::sort(axes.rbegin(), axes.rend());
    for (auto ax : axes) x = x.squeeze(ax);
    return {x};
  }
  if (op == "Identity") return {input(0)};
  if (op == "Constant") {
    const auto it = a.find("value");
    if (it == a.end()) throw Error("the ONNX evaluator covers Constant with a `value` tensor only");
    return {onnx_tensor_to_torch(it->second.t())};
  }
  if (op == "QuantizeLinear") {
    // y = saturate(round_half_to_even(x / scale) + zero_point); the zero point's type is y's.
    const auto& x = input(0);
    const auto axis = attr_int(a, "axis", 1);
    const auto scale = along_axis(input(1).to(torch::kFloat), axis, x.dim());
    const auto& zp = input(2);
    const bool signed8 = zp.defined() && zp.scalar_type() == torch::kChar;
    const auto zero = zp.defined() ? along_axis(zp.to(torch::kFloat), axis, x.dim()) : torch::zeros({});
    const double lo = signed8 ? -128 : 0, hi = signed8 ? 127 : 255;
    const auto q = torch::clamp(torch::round(x / scale) + zero, lo, hi);
    return {q.to(signed8 ? torch::kChar : torch::kByte)};
  }
  if (op == "DequantizeLinear") {
    const auto& x = input(0);
    const auto axis = attr_int(a, "axis", 1);
    const auto scale = along_axis(input(1).to(torch::kFloat), axis, x.dim());
    const auto zero = input(2).defined() ? along_axis(input(2).to(torch::kFloat), axis, x.dim()) : torch::zeros({});
    return {(x.to(torch::kFloat) - zero) * scale};
  }
  throw Error("the ONNX evaluator does not cover the operator " + op);
}

}  // namespace yoloflow::core
