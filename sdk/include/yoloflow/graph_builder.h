#pragma once
// An op-level inference graph that a model plugin writes from its own modules, for export
// (`yoloflow export`). The host implements it for a file format (ONNX); the plugin only
// names operations, so plugins never link a format library. Values are opaque names given
// out by the builder. Shapes follow ONNX conventions: NCHW, axes may be negative.
#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace yoloflow {

using GraphValue = std::string;

// What the graph is exported for; the plugin reads it, the host decides it.
struct GraphExportSpec {
  std::int64_t batch = 1;            // ignored when dynamic
  std::int64_t height = 640, width = 640;
  bool dynamic = false;              // batch, height and width are symbolic: no shape may be baked in
};

class GraphBuilder {
 public:
  virtual ~GraphBuilder() = default;
  virtual const GraphExportSpec& spec() const = 0;

  // The image input, (B, 3, H, W) float in [0, 1]; the graph's one input.
  virtual GraphValue input() = 0;
  // Marks the graph's main output ("output0"): (B, 4 + nc + extras, anchors), boxes as centre
  // x, centre y, width, height in input pixels, then class probabilities, then the head's
  // per-anchor outputs (HeadDescription::outputs) in the head's order, as they are (a
  // segmentation head's 32 mask coefficients).
  virtual void output(const GraphValue& v) = 0;

  // Weights: stored in the file; floating-point tensors in the graph's float type.
  virtual GraphValue initializer(const std::string& name, const torch::Tensor& t) = 0;
  // Small constants (float tensors in the graph's float type; int64 for shapes and indices).
  virtual GraphValue constant(const torch::Tensor& t) = 0;
  virtual GraphValue constant_i64(const std::vector<std::int64_t>& values) = 0;

  // Convolution with square kernel taken from `weight` (O, I/groups, k, k); `bias` may be "".
  virtual GraphValue conv(const GraphValue& x, const GraphValue& weight, const GraphValue& bias,
                          std::int64_t stride, std::int64_t pad, std::int64_t groups) = 0;
  virtual GraphValue max_pool(const GraphValue& x, std::int64_t kernel, std::int64_t stride, std::int64_t pad) = 0;
  // Nearest-neighbour upsampling by an integer factor in H and W.
  virtual GraphValue upsample_nearest(const GraphValue& x, std::int64_t factor) = 0;

  virtual GraphValue sigmoid(const GraphValue& x) = 0;
  virtual GraphValue add(const GraphValue& a, const GraphValue& b) = 0;
  virtual GraphValue sub(const GraphValue& a, const GraphValue& b) = 0;
  virtual GraphValue mul(const GraphValue& a, const GraphValue& b) = 0;
  virtual GraphValue div(const GraphValue& a, const GraphValue& b) = 0;
  virtual GraphValue matmul(const GraphValue& a, const GraphValue& b) = 0;
  virtual GraphValue softmax(const GraphValue& x, std::int64_t axis) = 0;

  virtual GraphValue concat(const std::vector<GraphValue>& xs, std::int64_t axis) = 0;
  virtual std::vector<GraphValue> split(const GraphValue& x, std::int64_t axis,
                                        const std::vector<std::int64_t>& sizes) = 0;
  // Elements [begin, end) along `axis`.
  virtual GraphValue slice(const GraphValue& x, std::int64_t axis, std::int64_t begin, std::int64_t end) = 0;
  // ONNX Reshape: 0 copies the input's dimension, -1 is inferred.
  virtual GraphValue reshape(const GraphValue& x, const std::vector<std::int64_t>& shape) = 0;
  // Reshape to a shape computed in the graph (an int64 1-D value).
  virtual GraphValue reshape_to(const GraphValue& x, const GraphValue& shape) = 0;
  virtual GraphValue transpose(const GraphValue& x, const std::vector<std::int64_t>& perm) = 0;

  // For dynamic graphs: the int64 shape of x (1-D); running sums along `axis` (CumSum).
  virtual GraphValue shape_of(const GraphValue& x) = 0;
  virtual GraphValue cumsum(const GraphValue& x, std::int64_t axis) = 0;

  // Marks a per-image head output (HeadDescription::outputs, per_anchor false) by its name:
  // the graph's next output after the main one ("output1" for the first), (B, channels, ...)
  // as the model's forward gives it (a segmentation head's "prototypes", (B, 32, H/4, W/4)).
  virtual void image_output(const std::string& name, const GraphValue& v) = 0;
  // Transposed convolution whose kernel equals its stride, no padding: (B, I, H, W) to
  // (B, O, H * stride, W * stride); `weight` (I, O, stride, stride) as PyTorch stores it,
  // `bias` (O) or "".
  virtual GraphValue conv_transpose(const GraphValue& x, const GraphValue& weight, const GraphValue& bias,
                                    std::int64_t stride) = 0;
};

}  // namespace yoloflow
