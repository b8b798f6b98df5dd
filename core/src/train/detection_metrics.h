#pragma once
// Detection metrics as Ultralytics reports them: precision and recall at the confidence
// of best mean F1, mAP50 and mAP50-95 (IoU 0.50:0.05:0.95, greedy one-to-one matching by
// highest IoU within class, 101-point COCO interpolation), per class and overall.
// Owner: training work (issue 4). Implemented in detection_metrics.cpp.
#include <string>
#include <vector>

#include <torch/torch.h>

namespace yoloflow::core {

struct ClassMetrics {
  int cls = 0;
  int instances = 0;  // labels of this class
  double precision = 0, recall = 0, ap50 = 0, ap50_95 = 0;
};

struct MetricsResult {
  double precision = 0, recall = 0, map50 = 0, map50_95 = 0;
  double fitness = 0;  // 0.1 * mAP50 + 0.9 * mAP50-95
  int images = 0, instances = 0;
  std::vector<ClassMetrics> per_class;  // classes with labels or predictions
};

class DetectionMetrics {
 public:
  explicit DetectionMetrics(int nc);
  // One image. `predictions`: (N, 6) [x1, y1, x2, y2, score, cls]; `labels`: (M, 5)
  // [cls, x1, y1, x2, y2]; same pixel space, CPU float tensors.
  void add_image(const torch::Tensor& predictions, const torch::Tensor& labels);
  MetricsResult compute() const;
  void reset();

 private:
  int nc_;
  // Per prediction: correct at each of 10 IoU thresholds, score, class; labels per class.
  std::vector<std::vector<bool>> correct_;
  std::vector<float> scores_;
  std::vector<int> pred_cls_;
  std::vector<int> label_cls_;
  int images_ = 0;
};

}  // namespace yoloflow::core
