#include "segment_head.h"

#include <algorithm>

namespace yoloflow::yolo11 {

namespace nn = torch::nn;

Proto::Proto(std::int64_t c_in, std::int64_t c_hidden, std::int64_t masks) {
  cv1_ = register_module("cv1", std::make_shared<Conv>(c_in, c_hidden, 3));
  upsample_ = register_module("upsample",
                              nn::ConvTranspose2d(nn::ConvTranspose2dOptions(c_hidden, c_hidden, 2).stride(2).bias(true)));
  cv2_ = register_module("cv2", std::make_shared<Conv>(c_hidden, c_hidden, 3));
  cv3_ = register_module("cv3", std::make_shared<Conv>(c_hidden, masks, 1));
}

Tensor Proto::forward(const Tensor& x) {
  return cv3_->forward(cv2_->forward(upsample_->forward(cv1_->forward(x))));
}

Segment::Segment(std::int64_t nc_, std::int64_t masks_, std::int64_t protos_, const std::vector<std::int64_t>& ch,
                 const std::vector<std::int64_t>& strides_)
    : Detect(nc_, ch, strides_), masks(masks_), protos(protos_) {
  proto_ = register_module("proto", std::make_shared<Proto>(ch[0], protos, masks));
  const auto c4 = std::max<std::int64_t>(ch[0] / 4, masks);
  cv4_ = register_module("cv4", std::make_shared<HeadBranchList>());
  for (auto x : ch) {
    cv4_->add(std::make_shared<HeadBranch>(std::make_shared<Conv>(x, c4, 3), std::make_shared<Conv>(c4, c4, 3), c4, masks));
  }
}

Tensor Segment::mask_coefficients(const std::vector<Tensor>& xs) {
  std::vector<Tensor> flat;
  flat.reserve(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    flat.push_back(cv4_->items[i]->forward(xs[i]).flatten(2));
  }
  return torch::cat(flat, 2);
}

Tensor Segment::prototypes(const Tensor& finest) { return proto_->forward(finest); }

GraphValue Proto::emit(GraphBuilder& g, const GraphValue& x, const std::string& name, MapSize size) const {
  const auto hidden = cv1_->emit(g, x, name + ".cv1", size);
  torch::NoGradGuard no_grad;
  const auto w = upsample_->weight.detach().to(torch::kCPU, torch::kFloat).contiguous();
  const auto b = upsample_->bias.detach().to(torch::kCPU, torch::kFloat).contiguous();
  const auto up = g.conv_transpose(hidden, g.initializer(name + ".upsample.weight", w),
                                   g.initializer(name + ".upsample.bias", b), 2);
  const MapSize doubled = size.h > 0 ? MapSize{size.h * 2, size.w * 2} : size;
  return cv3_->emit(g, cv2_->emit(g, up, name + ".cv2", doubled), name + ".cv3", doubled);
}

std::pair<GraphValue, GraphValue> Segment::emit_segment(GraphBuilder& g, const std::vector<GraphValue>& xs,
                                                        const std::string& name,
                                                        const std::vector<MapSize>& sizes) const {
  const auto detections = emit(g, xs, name, sizes);
  std::vector<GraphValue> coefficients;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const auto c = cv4_->items[i]->emit(g, xs[i], name + ".cv4." + std::to_string(i), sizes[i]);
    coefficients.push_back(g.reshape(c, {0, masks, -1}));
  }
  return {g.concat({detections, g.concat(coefficients, 2)}, 1), proto_->emit(g, xs[0], name + ".proto", sizes[0])};
}

}  // namespace yoloflow::yolo11
