#pragma once
// What a validation keeps for Ultralytics' plots (plots=True), beside the evaluator's numbers:
// the confusion matrix, each detection scored at IoU 0.5 for the box curves, and the first
// batches' images for val_batch*_labels.jpg / val_batch*_pred.jpg. Fed by the val sink with the
// same batches and detections the evaluator sees; written by the train sink after its run's
// last validation and by `yoloflow val` into their folders.
#include <string>
#include <utility>
#include <vector>

#include "training/eval/confusion_matrix.h"
#include "training/eval/metric_curves.h"
#include "training/eval/val_batch_plots.h"
#include "yoloflow/evaluator.h"
#include "yoloflow/sample.h"

namespace yoloflow::core {

class ValPlots {
 public:
  // `nms_conf`: the validation's NMS confidence; the matrix counts detections above 0.25 when it
  // is validation's default 0.001 (or lower), above it otherwise, as Ultralytics.
  explicit ValPlots(std::vector<std::string> names, double nms_conf = 0.001);

  // A validation starts: what the last one kept is dropped. `nc`: the model's classes.
  void reset(int nc);
  // One validated batch, as the evaluator receives it.
  void add_batch(const Batch& batch, const std::vector<ImagePredictions>& predictions);
  // The evaluator's matched detections once the validation is done (Evaluator::matched): each
  // family but "Box" gets its curves (MaskPR_curve.png ...) from them.
  void set_matched(std::vector<MatchedDetections> families) { matched_ = std::move(families); }

  const ConfusionMatrix& confusion() const { return confusion_; }
  MetricCurves box_curves() const { return metric_curves(scored_, label_cls_); }
  std::size_t labels() const { return label_cls_.size(); }

  // Writes every plot into `dir`: confusion_matrix.png, confusion_matrix_normalized.png,
  // Box{PR,F1,P,R}_curve.png (and each other family's, Mask{PR,F1,P,R}_curve.png for a
  // segmentation model), val_batch{0,1,2}_{labels,pred}.jpg. Returns the files written.
  // Throws Error when one cannot be written.
  std::vector<std::string> write(const std::string& dir) const;

 private:
  std::vector<std::string> names_;
  double matrix_conf_;
  ConfusionMatrix confusion_{0};
  std::vector<ScoredPrediction> scored_;
  std::vector<int> label_cls_;
  std::vector<DrawnBatch> drawn_;
  std::vector<MatchedDetections> matched_;
};

// A family's matched detections as the curves read them.
MetricCurves family_curves(const MatchedDetections& family);

// ValPlots::write, a failure warned about (`who`: "train", "val") instead of thrown: plots
// never fail a run. Returns the files written.
std::vector<std::string> write_val_plots(const ValPlots& plots, const std::string& dir, const std::string& who);

}  // namespace yoloflow::core
