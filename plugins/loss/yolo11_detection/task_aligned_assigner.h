#pragma once
// Task-aligned assignment of anchors to ground-truth boxes (TOOD; the rule YOLOv8/YOLO11
// train with). An anchor is a candidate for a GT when its centre lies inside the box; each
// GT keeps its top-k candidates by the alignment metric score^alpha * CIoU^beta; an anchor
// kept by several GTs goes to the one it overlaps most. Targets are soft: the one-hot class
// times the anchor's alignment, normalised per GT so its best anchor scores its best IoU.
// Batched over padded GTs with masks: fixed shapes, no host synchronisation.
#include <torch/torch.h>

#include "detection_loss.h"

namespace yoloflow::yolo11_loss {

struct Assignment {
  torch::Tensor labels;   // (B, A) int64 class of the assigned GT (0 where background)
  torch::Tensor bboxes;   // (B, A, 4) xyxy pixels of the assigned GT
  torch::Tensor scores;   // (B, A, nc) soft targets, zero for background anchors
  torch::Tensor fg_mask;  // (B, A) bool
  torch::Tensor gt_index; // (B, A) int64 index of the assigned GT within its image
};

class TaskAlignedAssigner {
 public:
  TaskAlignedAssigner(int nc, AssignerOptions options) : nc_(nc), opt_(options) {}
  // pd_scores (B, A, nc) probabilities; pd_bboxes (B, A, 4) xyxy pixels; anchors (A, 2)
  // pixels; gt_labels (B, M) int64; gt_bboxes (B, M, 4) xyxy pixels; gt_mask (B, M) bool.
  // Runs without autograd.
  Assignment operator()(const torch::Tensor& pd_scores, const torch::Tensor& pd_bboxes,
                        const torch::Tensor& anchors, const torch::Tensor& gt_labels,
                        const torch::Tensor& gt_bboxes, const torch::Tensor& gt_mask) const;

 private:
  int nc_;
  AssignerOptions opt_;
};

}  // namespace yoloflow::yolo11_loss
