#include "task_aligned_assigner.h"

#include <algorithm>

#include "box_ops.h"

namespace yoloflow::yolo11_loss {

Assignment TaskAlignedAssigner::operator()(const torch::Tensor& pd_scores,
                                           const torch::Tensor& pd_bboxes,
                                           const torch::Tensor& anchors,
                                           const torch::Tensor& gt_labels,
                                           const torch::Tensor& gt_bboxes,
                                           const torch::Tensor& gt_mask) const {
  torch::NoGradGuard no_grad;
  const auto B = pd_scores.size(0), A = pd_scores.size(1), M = gt_bboxes.size(1);
  const auto fopt = pd_bboxes.options();
  Assignment out;
  if (M == 0) {  // no GT rows at all (a shape, known on the host): everything is background
    out.labels = torch::zeros({B, A}, fopt.dtype(torch::kLong));
    out.bboxes = torch::zeros({B, A, 4}, fopt);
    out.scores = torch::zeros({B, A, nc_}, fopt);
    out.fg_mask = torch::zeros({B, A}, fopt.dtype(torch::kBool));
    out.gt_index = torch::zeros({B, A}, fopt.dtype(torch::kLong));
    return out;
  }

  // Every (GT, anchor) tensor below is B x M x A (100 MB of floats at batch 32 with 96 target
  // rows): in-place updates and early releases keep few alive at once, which is the step's
  // peak memory (and a CUDA graph's pool). No gradients here, so in place is safe.
  // Candidates: anchor centres strictly inside a (real) GT box, small sides widened. (B, M, A)
  auto ax = anchors.select(1, 0).view({1, 1, A}), ay = anchors.select(1, 1).view({1, 1, A});
  torch::Tensor candidate_boxes = gt_bboxes;
  if (opt_.small_side > 0) {
    auto xy = (gt_bboxes.narrow(-1, 0, 2) + gt_bboxes.narrow(-1, 2, 2)) / 2;
    auto wh = gt_bboxes.narrow(-1, 2, 2) - gt_bboxes.narrow(-1, 0, 2);
    wh = torch::where(wh < opt_.small_side, torch::full_like(wh, opt_.small_side_as), wh);
    candidate_boxes = torch::cat({xy - wh / 2, xy + wh / 2}, -1);
  }
  auto g = candidate_boxes.unsqueeze(-1);  // (B, M, 4, 1)
  auto valid = ((torch::min(torch::min(ax - g.select(2, 0), ay - g.select(2, 1)),
                            torch::min(g.select(2, 2) - ax, g.select(2, 3) - ay)) > 1e-9) &
                gt_mask.unsqueeze(-1))
                   .to(fopt.dtype());

  // Alignment metric of every (GT, anchor) pair; zero outside the candidates.
  auto overlaps = bbox_ciou(gt_bboxes.unsqueeze(2), pd_bboxes.unsqueeze(1)).clamp_min_(0).mul_(valid);
  auto labels = gt_labels.clamp_min(0);  // padding rows may carry -1
  auto align = pd_scores.transpose(1, 2).gather(1, labels.unsqueeze(-1).expand({B, M, A})).mul_(valid);
  align.pow_(opt_.alpha).mul_(overlaps.pow(opt_.beta));

  // Each GT keeps its top-k anchors (candidates only).
  const int64_t k = std::min<int64_t>(opt_.topk, A);
  auto mask_pos = torch::zeros_like(align).scatter_(-1, std::get<1>(align.topk(k, -1, true, true)), 1.0).mul_(valid);
  valid = torch::Tensor();

  // An anchor claimed by several GTs goes to the GT it overlaps most.
  {
    auto claims = mask_pos.sum(1, true);  // (B, 1, A)
    auto best_gt = torch::zeros_like(mask_pos).scatter_(1, overlaps.argmax(1, true), 1.0);
    mask_pos = torch::where(claims > 1, best_gt, mask_pos);
  }
  auto fg = mask_pos.sum(1) > 0;          // (B, A)
  auto gt_index = mask_pos.argmax(1);     // (B, A)

  out.labels = labels.gather(1, gt_index);
  out.bboxes = gt_bboxes.gather(1, gt_index.unsqueeze(-1).expand({B, A, 4}));
  auto one_hot = torch::zeros({B, A, nc_}, fopt).scatter_(-1, out.labels.unsqueeze(-1), 1.0);
  one_hot = one_hot * fg.unsqueeze(-1).to(fopt.dtype());

  // Soft targets: alignment rescaled per GT so that its best anchor gets its best IoU.
  align.mul_(mask_pos);
  auto max_align = align.amax(-1, true);                    // (B, M, 1)
  auto max_iou = overlaps.mul_(mask_pos).amax(-1, true);    // (B, M, 1)
  overlaps = torch::Tensor();
  mask_pos = torch::Tensor();
  auto norm = align.mul_(max_iou).div_(max_align + opt_.eps).amax(1).unsqueeze(-1);  // (B, A, 1)
  out.scores = one_hot * norm;
  out.fg_mask = fg;
  out.gt_index = gt_index;
  return out;
}

}  // namespace yoloflow::yolo11_loss
