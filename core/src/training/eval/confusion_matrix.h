#pragma once
// Ultralytics' detection confusion matrix (confusion_matrix.png and its normalized twin): rows
// the predicted class, columns the true class, one more row and column for background. Each
// image's predictions above conf 0.25 are matched to its labels whatever their classes, by box
// IoU above 0.45: pairs taken by IoU, highest first, each label and each prediction at most
// once. A matched pair counts at [predicted, true] (the diagonal when the classes agree), an
// unmatched label at [background, true], an unmatched prediction at [predicted, background].
// So column c sums to the labels of class c: every label is counted exactly once.
#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace yoloflow::core {

class ConfusionMatrix {
 public:
  explicit ConfusionMatrix(int nc, double conf = 0.25, double iou = 0.45);
  // One image: `predictions` (N, 6) [x1, y1, x2, y2, score, cls] and `labels` (M, 5)
  // [cls, x1, y1, x2, y2] in the same pixels (CPU, float). Classes outside 0..nc-1 are refused.
  void add_image(const torch::Tensor& predictions, const torch::Tensor& labels);
  void reset();

  int nc() const { return nc_; }
  double conf() const { return conf_; }
  double iou() const { return iou_; }
  // (nc + 1) x (nc + 1), row = predicted, column = true; index nc is background.
  std::int64_t at(int predicted, int truth) const { return counts_[static_cast<std::size_t>(predicted * (nc_ + 1) + truth)]; }
  std::int64_t column_sum(int truth) const;
  std::int64_t total() const;
  // Each column divided by its sum (0 where a column is empty): what confusion_matrix_normalized shows.
  std::vector<double> normalized() const;

 private:
  int nc_;
  double conf_, iou_;
  std::vector<std::int64_t> counts_;
};

// Draws the matrix as Ultralytics' confusion_matrix.png (counts) or, `normalized`,
// confusion_matrix_normalized.png (column fractions): a heat map, cells under 0.005 blank,
// class names on the axes (left out above 60 classes, where they would not be legible).
// Writes a PNG atomically; throws Error when it cannot.
void plot_confusion_matrix(const ConfusionMatrix& matrix, const std::vector<std::string>& names, bool normalized,
                           const std::string& png_path);

}  // namespace yoloflow::core
