#include "box_ops.h"

#include <cmath>

namespace yoloflow::yolo11_loss {

torch::Tensor bbox_ciou(const torch::Tensor& a, const torch::Tensor& b, double eps) {
  // The assigner calls this for every (GT, anchor) pair: each full-size intermediate is
  // B x M x A floats (100 MB at batch 32, 96 target rows), so the scopes below let go of
  // each as soon as it is used. Same operations in the same order as the formula.
  auto ax1 = a.select(-1, 0), ay1 = a.select(-1, 1), ax2 = a.select(-1, 2), ay2 = a.select(-1, 3);
  auto bx1 = b.select(-1, 0), by1 = b.select(-1, 1), bx2 = b.select(-1, 2), by2 = b.select(-1, 3);
  auto w1 = ax2 - ax1, h1 = ay2 - ay1 + eps;
  auto w2 = bx2 - bx1, h2 = by2 - by1 + eps;
  torch::Tensor iou;
  {
    auto inter = (torch::min(ax2, bx2) - torch::max(ax1, bx1)).clamp_min(0) *
                 (torch::min(ay2, by2) - torch::max(ay1, by1)).clamp_min(0);
    auto uni = w1 * h1 + w2 * h2 - inter + eps;
    iou = inter / uni;
  }
  // Smallest enclosing box diagonal squared, and squared distance between the centres.
  torch::Tensor distance;  // rho2 / c2
  {
    auto cw = torch::max(ax2, bx2) - torch::min(ax1, bx1);
    auto ch = torch::max(ay2, by2) - torch::min(ay1, by1);
    auto c2 = cw.pow(2) + ch.pow(2) + eps;
    auto rho2 = ((bx1 + bx2 - ax1 - ax2).pow(2) + (by1 + by2 - ay1 - ay2).pow(2)) / 4;
    distance = rho2 / c2;
  }
  const double k = 4.0 / (M_PI * M_PI);
  auto v = k * (torch::atan(w2 / h2) - torch::atan(w1 / h1)).pow(2);
  torch::Tensor alpha;
  {
    torch::NoGradGuard no_grad;  // the trade-off weight is a constant for the gradient
    alpha = v / (v - iou + (1 + eps));
  }
  return iou - (distance + v * alpha);
}

}  // namespace yoloflow::yolo11_loss
