// The YOLO11 blocks written into an export graph, op for op as their eval-mode forward():
// batch norm folded into the convolution before it, SiLU as x * sigmoid(x).
#include <cmath>

#include "blocks.h"
#include "yoloflow/head_geometry.h"

namespace yoloflow::yolo11 {

namespace {

// Conv2d weights and BatchNorm2d statistics folded into one convolution with bias, computed
// in double so folding adds no rounding beyond the final cast.
std::pair<Tensor, Tensor> fold_batch_norm(const torch::nn::Conv2d& conv, const torch::nn::BatchNorm2d& bn) {
  torch::NoGradGuard no_grad;
  const auto w = conv->weight.detach().to(torch::kCPU, torch::kDouble);
  const auto gamma = bn->weight.detach().to(torch::kCPU, torch::kDouble);
  const auto beta = bn->bias.detach().to(torch::kCPU, torch::kDouble);
  const auto mean = bn->running_mean.detach().to(torch::kCPU, torch::kDouble);
  const auto var = bn->running_var.detach().to(torch::kCPU, torch::kDouble);
  const auto scale = gamma / torch::sqrt(var + bn->options.eps());
  const auto fw = (w * scale.view({-1, 1, 1, 1})).to(torch::kFloat).contiguous();
  const auto fb = (beta - mean * scale).to(torch::kFloat).contiguous();
  return {fw, fb};
}

GraphValue silu(GraphBuilder& g, const GraphValue& x) { return g.mul(x, g.sigmoid(x)); }

MapSize scaled(MapSize s, std::int64_t stride) {
  if (s.h == 0) return s;
  return {s.h / stride, s.w / stride};
}

}  // namespace

GraphValue Conv::emit(GraphBuilder& g, const GraphValue& x, const std::string& name, MapSize) const {
  const auto [w, b] = fold_batch_norm(conv, bn);
  const auto& o = conv->options;
  const auto y = g.conv(x, g.initializer(name + ".weight", w), g.initializer(name + ".bias", b), o.stride()->at(0),
                        o.kernel_size()->at(0) / 2, o.groups());
  return act_ ? silu(g, y) : y;
}

GraphValue Chain::emit(GraphBuilder& g, const GraphValue& x, const std::string& name, MapSize size) const {
  GraphValue y = x;
  for (std::size_t i = 0; i < items_.size(); ++i) y = items_[i]->emit(g, y, name + "." + std::to_string(i), size);
  return y;
}

GraphValue Bottleneck::emit(GraphBuilder& g, const GraphValue& x, const std::string& name, MapSize size) const {
  const auto y = cv2_->emit(g, cv1_->emit(g, x, name + ".cv1", size), name + ".cv2", size);
  return add_ ? g.add(x, y) : y;
}

GraphValue C3k::emit(GraphBuilder& g, const GraphValue& x, const std::string& name, MapSize size) const {
  const auto a = m_->emit(g, cv1_->emit(g, x, name + ".cv1", size), name + ".m", size);
  const auto b = cv2_->emit(g, x, name + ".cv2", size);
  return cv3_->emit(g, g.concat({a, b}, 1), name + ".cv3", size);
}

GraphValue C3k2::emit(GraphBuilder& g, const GraphValue& x, const std::string& name, MapSize size) const {
  auto ys = g.split(cv1_->emit(g, x, name + ".cv1", size), 1, {c_, c_});
  const auto& blocks = m_->items();
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    ys.push_back(blocks[i]->emit(g, ys.back(), name + ".m." + std::to_string(i), size));
  }
  return cv2_->emit(g, g.concat(ys, 1), name + ".cv2", size);
}

GraphValue SPPF::emit(GraphBuilder& g, const GraphValue& x, const std::string& name, MapSize size) const {
  std::vector<GraphValue> ys{cv1_->emit(g, x, name + ".cv1", size)};
  for (int i = 0; i < 3; ++i) ys.push_back(g.max_pool(ys.back(), k_, 1, k_ / 2));
  return cv2_->emit(g, g.concat(ys, 1), name + ".cv2", size);
}

GraphValue Attention::emit(GraphBuilder& g, const GraphValue& x, const std::string& name, MapSize size) const {
  const auto dim = heads_ * head_dim_;
  // (B, heads, 2 key_dim + head_dim, N): batch copied from the input, N inferred.
  const auto qkv = g.reshape(qkv_->emit(g, x, name + ".qkv", size), {0, heads_, key_dim_ * 2 + head_dim_, -1});
  const auto parts = g.split(qkv, 2, {key_dim_, key_dim_, head_dim_});
  const auto& q = parts[0];
  const auto& k = parts[1];
  const auto& v = parts[2];
  auto attn = g.matmul(g.transpose(q, {0, 1, 3, 2}), k);
  attn = g.mul(attn, g.constant(torch::tensor({static_cast<float>(scale_)})));
  attn = g.softmax(attn, -1);
  const auto y = g.matmul(v, g.transpose(attn, {0, 1, 3, 2}));
  // Back to (B, C, H, W): known sizes when fixed, the input's own shape when dynamic.
  GraphValue y4, v4;
  if (size.h > 0) {
    y4 = g.reshape(y, {0, dim, size.h, size.w});
    v4 = g.reshape(v, {0, dim, size.h, size.w});
  } else {
    const auto shape = g.shape_of(x);
    y4 = g.reshape_to(y, shape);
    v4 = g.reshape_to(v, shape);
  }
  return proj_->emit(g, g.add(y4, pe_->emit(g, v4, name + ".pe", size)), name + ".proj", size);
}

GraphValue PSABlock::emit(GraphBuilder& g, const GraphValue& x, const std::string& name, MapSize size) const {
  const auto y = g.add(x, attn_->emit(g, x, name + ".attn", size));
  return g.add(y, ffn_->emit(g, y, name + ".ffn", size));
}

GraphValue C2PSA::emit(GraphBuilder& g, const GraphValue& x, const std::string& name, MapSize size) const {
  const auto ab = g.split(cv1_->emit(g, x, name + ".cv1", size), 1, {c_, c_});
  return cv2_->emit(g, g.concat({ab[0], m_->emit(g, ab[1], name + ".m", size)}, 1), name + ".cv2", size);
}

GraphValue Upsample::emit(GraphBuilder& g, const GraphValue& x, const std::string&, MapSize) const {
  return g.upsample_nearest(x, 2);
}

GraphValue Concat::emit_many(GraphBuilder& g, const std::vector<GraphValue>& xs, const std::string&, MapSize) const {
  return g.concat(xs, 1);
}

GraphValue HeadBranch::emit(GraphBuilder& g, const GraphValue& x, const std::string& name, MapSize size) const {
  const auto y = second_->emit(g, first_->emit(g, x, name + ".0", size), name + ".1", size);
  torch::NoGradGuard no_grad;
  const auto w = out->weight.detach().to(torch::kCPU, torch::kFloat).contiguous();
  const auto b = out->bias.detach().to(torch::kCPU, torch::kFloat).contiguous();
  return g.conv(y, g.initializer(name + ".2.weight", w), g.initializer(name + ".2.bias", b), 1, 0, 1);
}

GraphValue Detect::emit(GraphBuilder& g, const std::vector<GraphValue>& xs, const std::string& name,
                        const std::vector<MapSize>& sizes) const {
  torch::NoGradGuard no_grad;
  const auto dfl_w = g.initializer(name + ".dfl.conv.weight",
                                   dfl->conv->weight.detach().to(torch::kCPU, torch::kFloat).contiguous());
  std::vector<GraphValue> boxes, classes;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const auto level = std::to_string(i);
    const auto box = cv2->items[i]->emit(g, xs[i], name + ".cv2." + level, sizes[i]);
    const auto cls = cv3->items[i]->emit(g, xs[i], name + ".cv3." + level, sizes[i]);
    // DFL: softmax over each side's reg_max bins, expectation by the fixed 0..reg_max-1 conv.
    auto bins = g.transpose(g.reshape(box, {0, 4, reg_max, -1}), {0, 2, 1, 3});  // (B, reg_max, 4, HW)
    const auto dist = g.reshape(g.conv(g.softmax(bins, 1), dfl_w, "", 1, 0, 1), {0, 4, -1});  // (B, 4, HW)
    // The head's anchor points, the cell centres (x + 0.5, y + 0.5) row-major: constants from
    // head_geometry when the size is fixed, computed in the graph from the feature map when dynamic.
    GraphValue anchors;  // (2, HW) or (B, 2, HW)
    if (sizes[i].h > 0) {
      anchors = g.constant(head_geometry::cell_centres(sizes[i].h, sizes[i].w, torch::kFloat).t().contiguous());
    } else {
      // Running sums of (B, 1, H, W) maps of ones along W and H give 1..W and 1..H without
      // shape arithmetic (which OpenCV's dnn cannot fold); the box map is finite, so x * 0 + 1
      // is one everywhere. Sums along the last axis only (OpenCV 4.6's CumSum is wrong along
      // another), so H is summed on the transposed map.
      auto ones = [&](std::int64_t channel) {
        return g.add(g.mul(g.slice(box, 1, channel, channel + 1), g.constant(torch::tensor({0.0f}))),
                     g.constant(torch::tensor({1.0f})));
      };
      const auto half = g.constant(torch::tensor({0.5f}));
      const auto gx = g.sub(g.cumsum(ones(0), 3), half);
      const auto gy = g.sub(g.transpose(g.cumsum(g.transpose(ones(1), {0, 1, 3, 2}), 3), {0, 1, 3, 2}), half);
      anchors = g.reshape(g.concat({gx, gy}, 1), {0, 2, -1});  // (B, 2, HW)
    }
    const auto lt = g.slice(dist, 1, 0, 2), rb = g.slice(dist, 1, 2, 4);
    const auto x1y1 = g.sub(anchors, lt), x2y2 = g.add(anchors, rb);
    const auto centre = g.div(g.add(x1y1, x2y2), g.constant(torch::tensor({2.0f})));
    const auto wh = g.sub(x2y2, x1y1);
    const auto stride = g.constant(torch::tensor({static_cast<float>(strides[i])}));
    boxes.push_back(g.mul(g.concat({centre, wh}, 1), stride));
    classes.push_back(g.reshape(cls, {0, nc, -1}));
  }
  return g.concat({g.concat(boxes, 2), g.sigmoid(g.concat(classes, 2))}, 1);
}

}  // namespace yoloflow::yolo11
