#pragma once
// The data behind Ultralytics' BoxPR_curve.png, BoxF1_curve.png, BoxP_curve.png and
// BoxR_curve.png (and the Mask* ones): per class, precision and recall over 1000 confidences
// 0..1, F1 from them, and the precision envelope over 1000 recall points whose area is the
// class's AP at IoU 0.5. Computed from each prediction's score, class and whether it matched a
// label at IoU 0.5, by the rules the evaluators score with (docs/validation.md), so the curves'
// legends repeat the numbers metrics.json holds.
#include <cstdint>
#include <vector>

#include <torch/torch.h>

namespace yoloflow::core {

constexpr int kCurvePoints = 1000;

// One prediction as scored: its confidence, class and whether it was a true positive at IoU 0.5.
struct ScoredPrediction {
  float score = 0;
  int cls = 0;
  bool tp = false;
};

struct MetricCurves {
  std::vector<int> classes;     // classes with labels, by id: the rows below
  std::vector<int> instances;   // labels of each
  std::vector<double> x;        // kCurvePoints values 0..1: confidence (P, R, F1) or recall (PR)
  std::vector<std::vector<double>> precision, recall, f1;  // per class, over confidence
  std::vector<std::vector<double>> pr;                     // per class, precision envelope over recall
  std::vector<double> ap50;     // per class: 101-point interpolated AP at IoU 0.5
  double map50() const;         // mean of ap50 over classes with labels
};

// Per image: which predictions (N, 6) [x1, y1, x2, y2, score, cls] are true positives at
// `threshold` against labels of classes `label_cls` (M), given `iou` (M, N), as the evaluators
// match: same-class pairs at or above the threshold, each prediction keeps its highest-IoU
// label, then each label keeps the highest-scored prediction among those that chose it.
std::vector<bool> true_positives(const torch::Tensor& predictions, const std::vector<int>& label_cls,
                                 const torch::Tensor& iou, float threshold = 0.5f);

// The curves of `predictions` against `label_cls` (every label's class, over the validation).
MetricCurves metric_curves(std::vector<ScoredPrediction> predictions, const std::vector<int>& label_cls);

// Mean over classes, point by point (the curves' thick "all classes" line).
std::vector<double> mean_curve(const std::vector<std::vector<double>>& curves);
// Moving average of width 2*round(n*f/2)+1, edges repeated: the mean F1's smoothing before its
// peak is picked, as Ultralytics does.
std::vector<double> smooth_curve(const std::vector<double>& y, double f = 0.1);
// Area under `y` over `x` by the trapezoidal rule (the mean PR curve's area is close to mAP50).
double curve_area(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace yoloflow::core
