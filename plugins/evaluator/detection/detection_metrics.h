#pragma once
// Detection metrics computed exactly as Ultralytics 8.4's validator computes them, so that
// a number printed here means what the same number means there (docs/validation.md):
// - Matching, per image and per IoU threshold 0.50:0.05:0.95: same-class label/prediction
//   pairs at or above the threshold; each prediction keeps its highest-IoU label, then each
//   label keeps the highest-scored prediction among those that chose it. Predictions are
//   put in score order here, whatever order they arrive in.
// - AP per class: the precision envelope sampled at 101 recall points and integrated with
//   the trapezoidal rule; the curve drops to precision 0 at the highest recall reached, so
//   recall never reached earns nothing.
// - P and R per class at the confidence where the mean F1 over classes (smoothed) peaks.
// - Classes are those with labels; mAP is their mean. fitness = mAP50-95, as Ultralytics 8.4.
// - The overlap is the boxes' IoU, or one the caller gives (the segmentation evaluator's mask IoU):
//   Ultralytics matches and scores every task's overlap by these same rules.
#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "yoloflow/evaluator.h"

namespace yoloflow::detection_eval {

struct ClassMetrics {
  int cls = 0;
  int images = 0;     // images with at least one label of this class
  int instances = 0;  // labels of this class
  double precision = 0, recall = 0, ap50 = 0, ap50_95 = 0;
};

struct MetricsResult {
  double precision = 0, recall = 0, map50 = 0, map50_95 = 0;
  double fitness = 0;  // mAP50-95
  int images = 0, instances = 0;
  std::vector<ClassMetrics> per_class;  // classes with labels, by class id
};

class DetectionMetrics {
 public:
  explicit DetectionMetrics(int nc);
  // One image. `predictions`: (N, 6) [x1, y1, x2, y2, score, cls], any order; `labels`:
  // (M, 5) [cls, x1, y1, x2, y2]; same pixel space, CPU float tensors.
  void add_image(const torch::Tensor& predictions, const torch::Tensor& labels);
  // One image matched by another overlap than the boxes' (masks, keypoints): `iou` (M, N) between
  // label j and prediction i, in the order the rows are given; boxes are not read.
  void add_image(const torch::Tensor& predictions, const torch::Tensor& labels, const torch::Tensor& iou);
  MetricsResult compute() const;
  // Every prediction and label so far as the plots read them: correct at IoU 0.5.
  MatchedDetections matched(const std::string& family) const;
  void reset();

 private:
  int nc_;
  // Per prediction: correct at each of 10 IoU thresholds (bit t), score, class.
  std::vector<std::uint16_t> correct_;
  std::vector<float> scores_;
  std::vector<int> pred_cls_;
  std::vector<int> label_cls_;
  std::vector<int> label_images_;  // per class: images with a label of it
  int images_ = 0;
};

}  // namespace yoloflow::detection_eval
