#pragma once
// GraphBuilder written as an ONNX graph with libonnx's protobuf classes: every value is a
// named tensor, weights and constants are initializers, ops are written in their opset-13
// form, which opsets 13 to 17 share.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <onnx/onnx_pb.h>

#include "yoloflow/graph_builder.h"

namespace yoloflow::core {

class OnnxGraphBuilder final : public GraphBuilder {
 public:
  // `half`: weights, constants, input and output in float16; else float32.
  OnnxGraphBuilder(GraphExportSpec spec, bool half, onnx::GraphProto* graph);

  const GraphExportSpec& spec() const override { return spec_; }
  GraphValue input() override;
  void output(const GraphValue& v) override { output_ = v; }
  GraphValue initializer(const std::string& name, const torch::Tensor& t) override;
  GraphValue constant(const torch::Tensor& t) override;
  GraphValue constant_i64(const std::vector<std::int64_t>& values) override;
  GraphValue conv(const GraphValue& x, const GraphValue& weight, const GraphValue& bias, std::int64_t stride,
                  std::int64_t pad, std::int64_t groups) override;
  GraphValue max_pool(const GraphValue& x, std::int64_t kernel, std::int64_t stride, std::int64_t pad) override;
  GraphValue upsample_nearest(const GraphValue& x, std::int64_t factor) override;
  GraphValue sigmoid(const GraphValue& x) override { return op1("Sigmoid", {x}); }
  GraphValue add(const GraphValue& a, const GraphValue& b) override { return op1("Add", {a, b}); }
  GraphValue sub(const GraphValue& a, const GraphValue& b) override { return op1("Sub", {a, b}); }
  GraphValue mul(const GraphValue& a, const GraphValue& b) override { return op1("Mul", {a, b}); }
  GraphValue div(const GraphValue& a, const GraphValue& b) override { return op1("Div", {a, b}); }
  GraphValue matmul(const GraphValue& a, const GraphValue& b) override { return op1("MatMul", {a, b}); }
  GraphValue softmax(const GraphValue& x, std::int64_t axis) override;
  GraphValue concat(const std::vector<GraphValue>& xs, std::int64_t axis) override;
  std::vector<GraphValue> split(const GraphValue& x, std::int64_t axis,
                                const std::vector<std::int64_t>& sizes) override;
  GraphValue slice(const GraphValue& x, std::int64_t axis, std::int64_t begin, std::int64_t end) override;
  GraphValue reshape(const GraphValue& x, const std::vector<std::int64_t>& shape) override;
  GraphValue reshape_to(const GraphValue& x, const GraphValue& shape) override { return op1("Reshape", {x, shape}); }
  GraphValue transpose(const GraphValue& x, const std::vector<std::int64_t>& perm) override;
  GraphValue shape_of(const GraphValue& x) override { return op1("Shape", {x}); }
  GraphValue cumsum(const GraphValue& x, std::int64_t axis) override;
  void image_output(const std::string& name, const GraphValue& v) override;
  GraphValue conv_transpose(const GraphValue& x, const GraphValue& weight, const GraphValue& bias,
                            std::int64_t stride) override;

  // For the host's own additions (NMS): any op, its attributes set by `attrs`.
  std::vector<GraphValue> node(const std::string& op, const std::vector<GraphValue>& inputs, int outputs,
                               const std::function<void(onnx::NodeProto&)>& attrs = {});
  GraphValue op1(const std::string& op, const std::vector<GraphValue>& inputs,
                 const std::function<void(onnx::NodeProto&)>& attrs = {}) {
    return node(op, inputs, 1, attrs)[0];
  }
  GraphValue scalar_i64(std::int64_t v);
  // Element `index` of a 1-D shape, as a one-element 1-D tensor.
  GraphValue shape_dim(const GraphValue& shape, std::int64_t index);
  GraphValue constant_f32(const std::vector<float>& values);  // float32 whatever the graph's type
  GraphValue cast(const GraphValue& x, int onnx_type);
  int float_type() const { return float_type_; }

  // The value the model marked as its output ("" until it did).
  const GraphValue& model_output() const { return output_; }
  // The per-image outputs the model marked, in order: (head output name, value).
  const std::vector<std::pair<std::string, GraphValue>>& image_outputs() const { return image_outputs_; }
  // Renames the node output `v` to `name` (the graph output's name, "output0").
  void rename(const GraphValue& v, const std::string& name);
  // Dimensions of an initializer added through this builder.
  const std::vector<std::int64_t>& dims_of(const GraphValue& initializer) const;

 private:
  GraphValue fresh(const std::string& op);
  GraphValue add_initializer(const std::string& name, const torch::Tensor& t, int onnx_type);

  GraphExportSpec spec_;
  int float_type_;
  onnx::GraphProto* graph_;
  GraphValue input_, output_;
  std::vector<std::pair<std::string, GraphValue>> image_outputs_;
  std::map<std::string, int> counters_;
  std::map<GraphValue, std::vector<std::int64_t>> dims_;
};

}  // namespace yoloflow::core
