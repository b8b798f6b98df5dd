#include "detection_loss.h"

#include <algorithm>
#include <string>

#include "box_ops.h"
#include "task_aligned_assigner.h"
#include "yoloflow/error.h"
#include "yoloflow/head_geometry.h"
#include "yoloflow/torch_compat.h"

namespace yoloflow::yolo11_loss {

DetectionLoss::DetectionLoss(const HeadDescription& head, LossGains gains, AssignerOptions assigner)
    : head_(head), gains_(gains), assigner_(assigner) {
  if (head_.strides.empty()) throw Error("DetectionLoss: the detection head has no strides.");
  if (head_.nc <= 0 || head_.reg_max < 2) {
    throw Error("DetectionLoss: invalid head (nc " + std::to_string(head_.nc) + ", reg_max " +
                std::to_string(head_.reg_max) + ").");
  }
  if (assigner_.small_side == 0.0 && head_.strides.size() > 1) {
    std::vector<double> strides(head_.strides.begin(), head_.strides.end());
    std::sort(strides.begin(), strides.end());
    assigner_.small_side = strides[0];
    assigner_.small_side_as = strides[1];
  }
}

LossResult DetectionLoss::operator()(const std::vector<torch::Tensor>& levels,
                                     const torch::Tensor& targets, double min_score_sum,
                                     AssignedTargets* assigned) {
  const auto R = static_cast<int64_t>(head_.reg_max);
  const auto nc = static_cast<int64_t>(head_.nc);
  if (levels.size() != head_.strides.size()) {
    throw Error("DetectionLoss: got " + std::to_string(levels.size()) + " output levels, the head has " +
                std::to_string(head_.strides.size()) + " strides.");
  }
  const auto B = levels[0].size(0);
  std::vector<torch::Tensor> flat;
  std::vector<std::pair<int64_t, int64_t>> sizes;
  for (const auto& l : levels) {
    if (l.dim() != 4 || l.size(0) != B || l.size(1) != 4 * R + nc) {
      throw Error("DetectionLoss: an output level has shape " + std::string(c10::str(l.sizes())) +
                  ", expected (" + std::to_string(B) + ", " + std::to_string(4 * R + nc) +
                  ", H, W).");
    }
    sizes.emplace_back(l.size(2), l.size(3));
    // The loss runs in fp32 whatever precision the forward pass used.
    flat.push_back(l.flatten(2).to(torch::kFloat));
  }
  if (targets.dim() != 3 || targets.size(0) != B || targets.size(2) != 5) {
    throw Error("DetectionLoss: targets have shape " + std::string(c10::str(targets.sizes())) +
                ", expected (" + std::to_string(B) + ", M, 5).");
  }
  // All loss math in fp32 even when called inside an autocast region (matmul, CIoU and the
  // soft targets lose too much in fp16/bf16); the guard restores the caller's state.
  compat::AutocastGuard fp32_region(levels[0].device().type(), false, torch::kFloat);
  auto pred = torch::cat(flat, 2);                                        // (B, C, A)
  auto pred_distri = pred.narrow(1, 0, 4 * R).transpose(1, 2).contiguous();  // (B, A, 4R)
  auto pred_scores = pred.narrow(1, 4 * R, nc).transpose(1, 2).contiguous(); // (B, A, nc)
  const auto A = pred.size(2);
  const auto fopt = pred.options();

  const double img_h = static_cast<double>(sizes[0].first * head_.strides[0]);
  const double img_w = static_cast<double>(sizes[0].second * head_.strides[0]);
  auto [anchors, stride_t] = head_geometry::anchor_grid(sizes, head_.strides, fopt);  // grid units, (A, 1)

  // Targets: [cls, cx, cy, w, h] normalised -> labels and xyxy pixels; cls < 0 is padding.
  auto t = targets.to(pred.device(), torch::kFloat);
  auto gt_cls = t.select(2, 0);
  auto gt_mask = gt_cls >= 0;
  auto gt_labels = gt_cls.clamp_min(0).to(torch::kLong);
  auto cx = t.select(2, 1) * img_w, cy = t.select(2, 2) * img_h;
  auto hw = t.select(2, 3) * (img_w / 2), hh = t.select(2, 4) * (img_h / 2);
  auto gt_bboxes = torch::stack({cx - hw, cy - hh, cx + hw, cy + hh}, -1);  // (B, M, 4)

  // Predicted boxes: expectation of each side's distribution, in grid units.
  auto proj = torch::arange(R, fopt);
  auto logits = pred_distri.view({B, A, 4, R});
  auto pred_dist = torch::matmul(logits.softmax(-1), proj);  // (B, A, 4)
  auto pred_bboxes = head_geometry::distances_to_boxes(pred_dist, anchors);       // (B, A, 4)

  TaskAlignedAssigner assign(head_.nc, assigner_);
  auto a = assign(pred_scores.detach().sigmoid(), pred_bboxes.detach() * stride_t,
                  anchors * stride_t, gt_labels, gt_bboxes, gt_mask);

  if (assigned != nullptr) *assigned = AssignedTargets{a.fg_mask, a.gt_index, a.bboxes, img_h, img_w};

  const auto raw_score_sum = a.scores.sum();
  auto score_sum = raw_score_sum.clamp_min(min_score_sum);
  auto loss_cls = torch::binary_cross_entropy_with_logits(pred_scores, a.scores, {}, {},
                                                          at::Reduction::Sum) /
                  score_sum;

  // Box and DFL losses over foreground anchors, by mask: background anchors get weight 0
  // and a harmless target (their own prediction) so that nothing there can be inf or NaN.
  auto fg = a.fg_mask.unsqueeze(-1);
  auto weight = a.scores.sum(-1);  // (B, A), zero on background
  auto target_bboxes = torch::where(fg, a.bboxes / stride_t, pred_bboxes.detach());
  auto ciou = bbox_ciou(pred_bboxes, target_bboxes);
  auto loss_box = ((1.0 - ciou) * weight).sum() / score_sum;

  auto target_dist = head_geometry::boxes_to_distances(anchors, target_bboxes, static_cast<double>(R - 1) - 0.01);
  auto left = target_dist.floor().to(torch::kLong);  // (B, A, 4)
  auto w_left = (left + 1).to(torch::kFloat) - target_dist;
  auto log_p = logits.log_softmax(-1);
  auto ce_left = -log_p.gather(-1, left.unsqueeze(-1)).squeeze(-1);
  auto ce_right = -log_p.gather(-1, (left + 1).unsqueeze(-1)).squeeze(-1);
  auto dfl = (ce_left * w_left + ce_right * (1.0 - w_left)).mean(-1);  // (B, A)
  auto loss_dfl = (dfl * weight).sum() / score_sum;

  auto items = torch::stack({loss_box * gains_.box, loss_cls * gains_.cls, loss_dfl * gains_.dfl});
  LossResult r;
  r.total = items.sum() * static_cast<double>(B);
  r.items = items.detach();
  r.score_sum = raw_score_sum.detach();
  return r;
}

}  // namespace yoloflow::yolo11_loss
