#pragma once
// YOLO11 detection loss (Ultralytics' v8DetectionLoss semantics, our own implementation):
// TaskAlignedAssigner, CIoU box loss, DFL loss, BCE class loss. Written for few, large
// kernels and no host synchronisation: targets arrive padded to a fixed number of rows.
#include <vector>

#include <torch/torch.h>

#include "yoloflow/head.h"

namespace yoloflow::yolo11_loss {

struct LossGains {
  double box = 7.5;
  double cls = 0.5;
  double dfl = 1.5;
};

struct AssignerOptions {
  int topk = 10;
  double alpha = 0.5;
  double beta = 6.0;
  double eps = 1e-9;
  // Small objects (Ultralytics 8.4): a GT side shorter than `small_side` pixels counts as
  // `small_side_as` pixels, around the same centre, when choosing candidate anchors, so that
  // tiny boxes still get anchors; the box itself (IoU, targets) is unchanged. 0 = off here;
  // DetectionLoss sets them to the head's two smallest strides unless given (negative = off).
  double small_side = 0.0;
  double small_side_as = 0.0;
};

struct LossResult {
  torch::Tensor total;  // scalar: (box*g_box + cls*g_cls + dfl*g_dfl) * batch_size, for backward
  torch::Tensor items;  // (3,) detached: box, cls, dfl (gained, not multiplied by batch size)
  torch::Tensor score_sum;  // () detached: the target-score sum the losses divide by, before its floor
};

// What the assignment decided, for a loss that adds terms of its own per positive anchor (the
// segmentation loss's masks): which anchors are positive, the index of the GT each one was given
// within its image's target rows, that GT's box (xyxy pixels), and the input size.
struct AssignedTargets {
  torch::Tensor fg_mask;   // (B, A) bool
  torch::Tensor gt_index;  // (B, A) int64
  torch::Tensor bboxes;    // (B, A, 4) float
  double img_h = 0, img_w = 0;
};

class DetectionLoss {
 public:
  DetectionLoss(const HeadDescription& head, LossGains gains = {}, AssignerOptions assigner = {});
  // `levels`: the model's training output, per level (B, 4*reg_max + nc, H, W).
  // `targets`: (B, M, 5) float [cls, cx, cy, w, h], coordinates normalised to 0..1 by the
  // image width and height; rows with cls < 0 are padding. Image size is inferred from the
  // level shapes and strides. The losses are divided by the target-score sum, at least
  // `min_score_sum` (Ultralytics' floor: 1); a micro-batch passes its share of the batch's images
  // (yoloflow/loss.h), so that its floor adds up to the whole batch's.
  // `assigned`, when given, receives the assignment.
  LossResult operator()(const std::vector<torch::Tensor>& levels, const torch::Tensor& targets,
                        double min_score_sum = 1.0, AssignedTargets* assigned = nullptr);
  const HeadDescription& head() const { return head_; }
  const AssignerOptions& assigner() const { return assigner_; }
  void set_gains(const LossGains& gains) { gains_ = gains; }

 private:
  HeadDescription head_;
  LossGains gains_;
  AssignerOptions assigner_;
};

}  // namespace yoloflow::yolo11_loss
