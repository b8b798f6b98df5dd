#include "training/detect/instance_mask_ops.h"

#include <vector>

namespace yoloflow::core {

MaskProducts::MaskProducts(const torch::Tensor& prototypes, const torch::Tensor& coefficients)
    : h_(prototypes.size(1)), w_(prototypes.size(2)) {
  prototypes_ = prototypes.to(torch::kCPU, torch::kFloat).reshape({prototypes.size(0), h_ * w_});
  coefficients_ = coefficients.to(torch::kCPU, torch::kFloat);
}

torch::Tensor MaskProducts::chunk(std::int64_t begin, std::int64_t count) const {
  return coefficients_.narrow(0, begin, count).matmul(prototypes_).reshape({count, h_, w_});
}

torch::Tensor resize_masks(const torch::Tensor& masks, std::int64_t height, std::int64_t width) {
  namespace F = torch::nn::functional;
  return F::interpolate(masks.unsqueeze(0), F::InterpolateFuncOptions()
                                                .size(std::vector<std::int64_t>{height, width})
                                                .mode(torch::kBilinear)
                                                .align_corners(false))
      .squeeze(0);
}

torch::Tensor crop_masks(const torch::Tensor& masks, const torch::Tensor& boxes) {
  const auto n = masks.size(0), h = masks.size(1), w = masks.size(2);
  const auto x1 = boxes.select(1, 0).view({n, 1, 1}), y1 = boxes.select(1, 1).view({n, 1, 1});
  const auto x2 = boxes.select(1, 2).view({n, 1, 1}), y2 = boxes.select(1, 3).view({n, 1, 1});
  const auto cols = torch::arange(w, torch::kFloat).view({1, 1, w});
  const auto rows = torch::arange(h, torch::kFloat).view({1, h, 1});
  return masks * cols.ge(x1).logical_and(cols.lt(x2)).logical_and(rows.ge(y1)).logical_and(rows.lt(y2));
}

}  // namespace yoloflow::core
