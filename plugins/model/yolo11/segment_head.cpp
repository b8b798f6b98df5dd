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

}  // namespace yoloflow::yolo11
