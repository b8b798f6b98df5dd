#include "training/eval/val_plots.h"

#include <algorithm>
#include <cctype>
#include <exception>

#include "training/detect/batch_boxes.h"
#include "training/detect/image_file.h"
#include "training/eval/box_iou.h"
#include "training/eval/metric_curves_plot.h"
#include "yoloflow/log.h"
#include "yoloflow/printable.h"

namespace yoloflow::core {
namespace {

constexpr std::size_t kDrawnBatches = 3;  // val_batch0..2, as Ultralytics

}  // namespace

ValPlots::ValPlots(std::vector<std::string> names, double nms_conf)
    : names_(std::move(names)), matrix_conf_(nms_conf <= 0.001 ? 0.25 : nms_conf) {}

void ValPlots::reset(int nc) {
  confusion_ = ConfusionMatrix(nc, matrix_conf_, 0.45);
  scored_.clear();
  label_cls_.clear();
  drawn_.clear();
}

void ValPlots::add_batch(const Batch& batch, const std::vector<ImagePredictions>& predictions) {
  // The batch's labels per image, in its pixels: [cls, x1, y1, x2, y2].
  const auto boxes = batch_label_boxes(batch);
  std::vector<std::vector<float>> labels(boxes.size());
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    for (const Box& b : boxes[i]) labels[i].insert(labels[i].end(), {static_cast<float>(b.cls), b.x1, b.y1, b.x2, b.y2});
  }
  for (std::size_t i = 0; i < labels.size() && i < predictions.size(); ++i) {
    const auto m = static_cast<std::int64_t>(labels[i].size() / 5);
    const auto lab = m > 0 ? torch::from_blob(labels[i].data(), {m, 5}, torch::kFloat).clone() : torch::zeros({0, 5});
    const torch::Tensor pred = predictions[i].boxes.defined() && predictions[i].boxes.numel() > 0
                                   ? predictions[i].boxes.to(torch::kCPU, torch::kFloat).reshape({-1, 6}).contiguous()
                                   : torch::zeros({0, 6});
    confusion_.add_image(pred, lab);
    std::vector<int> cls(static_cast<std::size_t>(m));
    for (std::int64_t j = 0; j < m; ++j) cls[static_cast<std::size_t>(j)] = static_cast<int>(labels[i][static_cast<std::size_t>(j * 5)]);
    label_cls_.insert(label_cls_.end(), cls.begin(), cls.end());
    const auto n = pred.size(0);
    if (n == 0) continue;
    const auto tp = m > 0 ? true_positives(pred, cls, pairwise_box_iou(lab.narrow(1, 1, 4), pred.narrow(1, 0, 4)))
                          : std::vector<bool>(static_cast<std::size_t>(n), false);
    auto p = pred.accessor<float, 2>();
    for (std::int64_t k = 0; k < n; ++k) scored_.push_back({p[k][4], static_cast<int>(p[k][5]), tp[static_cast<std::size_t>(k)]});
  }
  if (drawn_.size() < kDrawnBatches) drawn_.push_back(keep_batch_for_drawing(batch, predictions, names_));
}

std::vector<std::string> ValPlots::write(const std::string& dir) const {
  std::vector<std::string> written;
  plot_confusion_matrix(confusion_, names_, false, dir + "/confusion_matrix.png");
  written.emplace_back("confusion_matrix.png");
  plot_confusion_matrix(confusion_, names_, true, dir + "/confusion_matrix_normalized.png");
  written.emplace_back("confusion_matrix_normalized.png");
  for (auto& f : plot_metric_curves(box_curves(), names_, "Box", dir)) written.push_back(f);
  for (const auto& family : matched_) {
    if (family.family == "Box" || family.family.empty()) continue;  // drawn above, from the plots' own matching
    // The family names files ("Mask" -> MaskPR_curve.png): letters and digits only.
    if (!std::all_of(family.family.begin(), family.family.end(), [](unsigned char c) { return std::isalnum(c) != 0; })) {
      YF_LOG_WARN("validation plots: no curves for the evaluator's family '" << printable(family.family)
                                                                          << "' (a name of letters and digits names the files)");
      continue;
    }
    for (auto& f : plot_metric_curves(family_curves(family), names_, family.family, dir)) written.push_back(f);
  }
  for (std::size_t b = 0; b < drawn_.size(); ++b) {
    const std::string stem = dir + "/val_batch" + std::to_string(b);
    write_image_file(stem + "_labels.jpg", draw_label_grid(drawn_[b], names_));
    write_image_file(stem + "_pred.jpg", draw_prediction_grid(drawn_[b], names_));
    written.push_back("val_batch" + std::to_string(b) + "_labels.jpg");
    written.push_back("val_batch" + std::to_string(b) + "_pred.jpg");
  }
  return written;
}

MetricCurves family_curves(const MatchedDetections& family) {
  std::vector<ScoredPrediction> scored;
  const std::size_t n = std::min({family.scores.size(), family.classes.size(), family.correct.size()});
  scored.reserve(n);
  for (std::size_t k = 0; k < n; ++k) scored.push_back({family.scores[k], family.classes[k], family.correct[k] != 0});
  return metric_curves(std::move(scored), family.label_classes);
}

std::vector<std::string> write_val_plots(const ValPlots& plots, const std::string& dir, const std::string& who) {
  try {
    return plots.write(dir);
  } catch (const std::exception& e) {
    YF_LOG_WARN(who << ": the validation plots were not all written: " << e.what());
  }
  return {};
}

}  // namespace yoloflow::core
