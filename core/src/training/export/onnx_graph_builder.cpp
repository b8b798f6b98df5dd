// GraphBuilder as ONNX protobuf: each op one NodeProto, each tensor an initializer.
#include "training/export/onnx_graph_builder.h"

#include "yoloflow/error.h"

namespace yoloflow::core {

namespace {

void set_ints(onnx::NodeProto& n, const std::string& name, const std::vector<std::int64_t>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (auto x : v) a->add_ints(x);
}

void set_int(onnx::NodeProto& n, const std::string& name, std::int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void set_string(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

}  // namespace

OnnxGraphBuilder::OnnxGraphBuilder(GraphExportSpec spec, bool half, onnx::GraphProto* graph)
    : spec_(spec), float_type_(half ? onnx::TensorProto::FLOAT16 : onnx::TensorProto::FLOAT), graph_(graph) {}

GraphValue OnnxGraphBuilder::input() {
  if (!input_.empty()) return input_;
  input_ = "images";
  auto* in = graph_->add_input();
  in->set_name(input_);
  auto* t = in->mutable_type()->mutable_tensor_type();
  t->set_elem_type(float_type_);
  auto* shape = t->mutable_shape();
  auto dim = [&](const std::string& symbol, std::int64_t value) {
    auto* d = shape->add_dim();
    if (spec_.dynamic && !symbol.empty()) {
      d->set_dim_param(symbol);
    } else {
      d->set_dim_value(value);
    }
  };
  dim("batch", spec_.batch);
  dim("", 3);
  dim("height", spec_.height);
  dim("width", spec_.width);
  return input_;
}

GraphValue OnnxGraphBuilder::fresh(const std::string& op) {
  return "/" + op + "_" + std::to_string(counters_[op]++);
}

GraphValue OnnxGraphBuilder::add_initializer(const std::string& name, const torch::Tensor& t, int onnx_type) {
  if (dims_.count(name) != 0) throw Error("export: the tensor name '" + name + "' is used twice");
  torch::Tensor c;
  switch (onnx_type) {
    case onnx::TensorProto::FLOAT: c = t.to(torch::kCPU, torch::kFloat); break;
    case onnx::TensorProto::FLOAT16: c = t.to(torch::kCPU, torch::kHalf); break;
    case onnx::TensorProto::INT64: c = t.to(torch::kCPU, torch::kLong); break;
    default: throw Error("export: unsupported initializer type");
  }
  c = c.contiguous();
  auto* init = graph_->add_initializer();
  init->set_name(name);
  init->set_data_type(onnx_type);
  std::vector<std::int64_t> dims(c.sizes().begin(), c.sizes().end());
  for (auto d : dims) init->add_dims(d);
  // Raw little-endian bytes, as ONNX stores them (x86 and ARM are little-endian).
  init->set_raw_data(std::string(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size()));
  dims_[name] = dims;
  return name;
}

GraphValue OnnxGraphBuilder::initializer(const std::string& name, const torch::Tensor& t) {
  const bool fp = t.is_floating_point();
  return add_initializer(name, t, fp ? float_type_ : onnx::TensorProto::INT64);
}

GraphValue OnnxGraphBuilder::constant(const torch::Tensor& t) {
  return initializer(fresh("const"), t);
}

GraphValue OnnxGraphBuilder::constant_i64(const std::vector<std::int64_t>& values) {
  return add_initializer(fresh("const"), torch::tensor(values, torch::kLong), onnx::TensorProto::INT64);
}

GraphValue OnnxGraphBuilder::scalar_i64(std::int64_t v) {
  return add_initializer(fresh("const"), torch::scalar_tensor(v, torch::kLong), onnx::TensorProto::INT64);
}

GraphValue OnnxGraphBuilder::constant_f32(const std::vector<float>& values) {
  return add_initializer(fresh("const"), torch::tensor(values, torch::kFloat), onnx::TensorProto::FLOAT);
}

const std::vector<std::int64_t>& OnnxGraphBuilder::dims_of(const GraphValue& initializer) const {
  const auto it = dims_.find(initializer);
  if (it == dims_.end()) throw Error("export: '" + initializer + "' is not an initializer");
  return it->second;
}

std::vector<GraphValue> OnnxGraphBuilder::node(const std::string& op, const std::vector<GraphValue>& inputs,
                                               int outputs, const std::function<void(onnx::NodeProto&)>& attrs) {
  auto* n = graph_->add_node();
  n->set_op_type(op);
  n->set_name(fresh(op));
  for (const auto& i : inputs) n->add_input(i);
  std::vector<GraphValue> outs;
  for (int k = 0; k < outputs; ++k) {
    outs.push_back(n->name() + "_output_" + std::to_string(k));
    n->add_output(outs.back());
  }
  if (attrs) attrs(*n);
  return outs;
}

GraphValue OnnxGraphBuilder::conv(const GraphValue& x, const GraphValue& weight, const GraphValue& bias,
                                  std::int64_t stride, std::int64_t pad, std::int64_t groups) {
  const auto& w = dims_of(weight);
  if (w.size() != 4) throw Error("export: conv weight '" + weight + "' is not 4-D");
  std::vector<GraphValue> in{x, weight};
  if (!bias.empty()) in.push_back(bias);
  return op1("Conv", in, [&](onnx::NodeProto& n) {
    set_ints(n, "kernel_shape", {w[2], w[3]});
    set_ints(n, "strides", {stride, stride});
    set_ints(n, "pads", {pad, pad, pad, pad});
    set_ints(n, "dilations", {1, 1});
    set_int(n, "group", groups);
  });
}

GraphValue OnnxGraphBuilder::conv_transpose(const GraphValue& x, const GraphValue& weight, const GraphValue& bias,
                                            std::int64_t stride) {
  const auto& w = dims_of(weight);
  if (w.size() != 4 || w[2] != stride || w[3] != stride) {
    throw Error("export: conv_transpose weight '" + weight + "' is not (in, out, stride, stride)");
  }
  std::vector<GraphValue> in{x, weight};
  if (!bias.empty()) in.push_back(bias);
  return op1("ConvTranspose", in, [&](onnx::NodeProto& n) {
    set_ints(n, "kernel_shape", {stride, stride});
    set_ints(n, "strides", {stride, stride});
    set_ints(n, "pads", {0, 0, 0, 0});
    set_ints(n, "dilations", {1, 1});
    set_int(n, "group", 1);
  });
}

void OnnxGraphBuilder::image_output(const std::string& name, const GraphValue& v) {
  for (const auto& [n, _] : image_outputs_) {
    if (n == name) throw Error("export: the model marks its output '" + name + "' twice");
  }
  image_outputs_.emplace_back(name, v);
}

GraphValue OnnxGraphBuilder::max_pool(const GraphValue& x, std::int64_t kernel, std::int64_t stride,
                                      std::int64_t pad) {
  return op1("MaxPool", {x}, [&](onnx::NodeProto& n) {
    set_ints(n, "kernel_shape", {kernel, kernel});
    set_ints(n, "strides", {stride, stride});
    set_ints(n, "pads", {pad, pad, pad, pad});
  });
}

GraphValue OnnxGraphBuilder::upsample_nearest(const GraphValue& x, std::int64_t factor) {
  const auto f = static_cast<float>(factor);
  // Scales (not sizes), so the op holds for any input size; asymmetric + floor is PyTorch's
  // nearest.
  return op1("Resize", {x, "", constant_f32({1.0f, 1.0f, f, f})}, [&](onnx::NodeProto& n) {
    set_string(n, "mode", "nearest");
    set_string(n, "coordinate_transformation_mode", "asymmetric");
    set_string(n, "nearest_mode", "floor");
  });
}

GraphValue OnnxGraphBuilder::softmax(const GraphValue& x, std::int64_t axis) {
  return op1("Softmax", {x}, [&](onnx::NodeProto& n) { set_int(n, "axis", axis); });
}

GraphValue OnnxGraphBuilder::concat(const std::vector<GraphValue>& xs, std::int64_t axis) {
  return op1("Concat", xs, [&](onnx::NodeProto& n) { set_int(n, "axis", axis); });
}

std::vector<GraphValue> OnnxGraphBuilder::split(const GraphValue& x, std::int64_t axis,
                                                const std::vector<std::int64_t>& sizes) {
  // Unequal parts as one Slice each: OpenCV's dnn (4.6) reads Split's sizes input as "equal
  // parts", and every runtime reads Slice.
  bool equal = true;
  for (auto s : sizes) equal = equal && s == sizes.front();
  if (!equal) {
    std::vector<GraphValue> parts;
    std::int64_t begin = 0;
    for (auto s : sizes) {
      parts.push_back(slice(x, axis, begin, begin + s));
      begin += s;
    }
    return parts;
  }
  return node("Split", {x, constant_i64(sizes)}, static_cast<int>(sizes.size()),
              [&](onnx::NodeProto& n) { set_int(n, "axis", axis); });
}

GraphValue OnnxGraphBuilder::slice(const GraphValue& x, std::int64_t axis, std::int64_t begin, std::int64_t end) {
  return op1("Slice", {x, constant_i64({begin}), constant_i64({end}), constant_i64({axis})});
}

GraphValue OnnxGraphBuilder::reshape(const GraphValue& x, const std::vector<std::int64_t>& shape) {
  return op1("Reshape", {x, constant_i64(shape)});
}

GraphValue OnnxGraphBuilder::transpose(const GraphValue& x, const std::vector<std::int64_t>& perm) {
  return op1("Transpose", {x}, [&](onnx::NodeProto& n) { set_ints(n, "perm", perm); });
}

GraphValue OnnxGraphBuilder::shape_dim(const GraphValue& shape, std::int64_t index) {
  return op1("Gather", {shape, constant_i64({index})}, [&](onnx::NodeProto& n) { set_int(n, "axis", 0); });
}

GraphValue OnnxGraphBuilder::cumsum(const GraphValue& x, std::int64_t axis) {
  // In float32 whatever the graph's type: ONNX Runtime's CPU CumSum has no float16 kernel.
  if (float_type_ == onnx::TensorProto::FLOAT) return op1("CumSum", {x, scalar_i64(axis)});
  return cast(op1("CumSum", {cast(x, onnx::TensorProto::FLOAT), scalar_i64(axis)}), float_type_);
}

GraphValue OnnxGraphBuilder::cast(const GraphValue& x, int onnx_type) {
  return op1("Cast", {x}, [&](onnx::NodeProto& n) { set_int(n, "to", onnx_type); });
}

void OnnxGraphBuilder::rename(const GraphValue& v, const std::string& name) {
  for (auto& n : *graph_->mutable_node()) {
    for (auto& o : *n.mutable_output()) {
      if (o == v) o = name;
    }
    for (auto& i : *n.mutable_input()) {
      if (i == v) i = name;
    }
  }
}

}  // namespace yoloflow::core
