#pragma once
// Non-maximum suppression for decoded detections (validation, predict).
#include <vector>

#include <torch/torch.h>

#include "yoloflow/evaluator.h"
#include "yoloflow/model.h"

namespace yoloflow::core {

struct NmsOptions {
  double conf = 0.25;       // minimum class score kept
  double iou = 0.7;         // IoU above which a lower-scored box of the same class is dropped
  int max_det = 300;        // boxes kept per image
  bool multi_label = false; // one box may be kept once per class scoring above conf (validation)
  bool agnostic = false;    // suppress across classes
  bool one_class = false;   // every kept box becomes class 0 (validating as one class: single_cls)
  int max_candidates = 30000;  // boxes entering NMS per image, highest scores first
};

// For each image of `det`: a (N, 6) float tensor [x1, y1, x2, y2, score, class] on the
// CPU, sorted by score, N <= max_det. Handles zero boxes and many thousands of boxes.
// `anchors`, when given, receives each image's (N,) int64 anchor indices: the prediction each
// kept row came from (with multi_label, one anchor may give several rows).
std::vector<torch::Tensor> non_max_suppression(const Predictions& det, const NmsOptions& options,
                                               std::vector<torch::Tensor>* anchors = nullptr);

// Each image's kept rows with the head's other outputs beside them (evaluator.h): per-anchor
// outputs at the kept rows' anchors, per-image outputs the image's; on the CPU.
std::vector<ImagePredictions> image_predictions(const Predictions& det, const HeadDescription& head,
                                                const std::vector<torch::Tensor>& kept,
                                                const std::vector<torch::Tensor>& anchors);

}  // namespace yoloflow::core
