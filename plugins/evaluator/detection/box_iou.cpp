#include "box_iou.h"

namespace yoloflow::detection_eval {

torch::Tensor bbox_iou_matrix(const torch::Tensor& a, const torch::Tensor& b) {
  auto a_ = a.unsqueeze(1);  // (N, 1, 4)
  auto b_ = b.unsqueeze(0);  // (1, M, 4)
  auto lt = torch::max(a_.narrow(-1, 0, 2), b_.narrow(-1, 0, 2));
  auto rb = torch::min(a_.narrow(-1, 2, 2), b_.narrow(-1, 2, 2));
  auto wh = (rb - lt).clamp_min(0);
  auto inter = wh.select(-1, 0) * wh.select(-1, 1);
  auto area_a = (a.select(-1, 2) - a.select(-1, 0)) * (a.select(-1, 3) - a.select(-1, 1));
  auto area_b = (b.select(-1, 2) - b.select(-1, 0)) * (b.select(-1, 3) - b.select(-1, 1));
  return inter / (area_a.unsqueeze(1) + area_b.unsqueeze(0) - inter + 1e-7);
}

}  // namespace yoloflow::detection_eval
