#include "training/eval/box_iou.h"

namespace yoloflow::core {

torch::Tensor pairwise_box_iou(const torch::Tensor& a, const torch::Tensor& b) {
  const auto lt = torch::max(a.unsqueeze(1).narrow(2, 0, 2), b.unsqueeze(0).narrow(2, 0, 2));
  const auto rb = torch::min(a.unsqueeze(1).narrow(2, 2, 2), b.unsqueeze(0).narrow(2, 2, 2));
  const auto wh = (rb - lt).clamp_min(0);
  const auto inter = wh.select(2, 0) * wh.select(2, 1);
  const auto area_a = (a.select(1, 2) - a.select(1, 0)) * (a.select(1, 3) - a.select(1, 1));
  const auto area_b = (b.select(1, 2) - b.select(1, 0)) * (b.select(1, 3) - b.select(1, 1));
  return inter / (area_a.unsqueeze(1) + area_b.unsqueeze(0) - inter + 1e-7);
}

}  // namespace yoloflow::core
