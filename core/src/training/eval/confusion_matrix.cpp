#include "training/eval/confusion_matrix.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <opencv2/imgproc.hpp>

#include "training/detect/image_file.h"
#include "training/eval/box_iou.h"
#include "training/eval/plot_canvas.h"
#include "yoloflow/error.h"

namespace yoloflow::core {

ConfusionMatrix::ConfusionMatrix(int nc, double conf, double iou)
    : nc_(std::max(nc, 0)), conf_(conf), iou_(iou), counts_(static_cast<std::size_t>((nc_ + 1) * (nc_ + 1)), 0) {}

void ConfusionMatrix::reset() { std::fill(counts_.begin(), counts_.end(), 0); }

std::int64_t ConfusionMatrix::column_sum(int truth) const {
  std::int64_t s = 0;
  for (int r = 0; r <= nc_; ++r) s += at(r, truth);
  return s;
}

std::int64_t ConfusionMatrix::total() const {
  std::int64_t s = 0;
  for (auto v : counts_) s += v;
  return s;
}

std::vector<double> ConfusionMatrix::normalized() const {
  std::vector<double> out(counts_.size(), 0.0);
  for (int c = 0; c <= nc_; ++c) {
    const double sum = static_cast<double>(column_sum(c));
    if (sum <= 0) continue;
    for (int r = 0; r <= nc_; ++r) out[static_cast<std::size_t>(r * (nc_ + 1) + c)] = static_cast<double>(at(r, c)) / sum;
  }
  return out;
}

void ConfusionMatrix::add_image(const torch::Tensor& predictions, const torch::Tensor& labels) {
  auto pred = predictions.defined() && predictions.numel() > 0 ? predictions.to(torch::kCPU, torch::kFloat).reshape({-1, 6})
                                                               : torch::zeros({0, 6});
  const auto lab = labels.defined() && labels.numel() > 0 ? labels.to(torch::kCPU, torch::kFloat).reshape({-1, 5}).contiguous()
                                                          : torch::zeros({0, 5});
  pred = pred.index_select(0, torch::nonzero(pred.select(1, 4) > conf_).flatten()).contiguous();
  const auto n = pred.size(0), m = lab.size(0);
  auto p = pred.accessor<float, 2>();
  auto l = lab.accessor<float, 2>();
  auto cls_of = [&](float c) {
    const int k = static_cast<int>(c);
    if (k < 0 || k >= nc_) {
      throw Error("confusion matrix: class " + std::to_string(k) + " is outside 0.." + std::to_string(nc_ - 1));
    }
    return k;
  };
  auto add = [&](int predicted, int truth) { ++counts_[static_cast<std::size_t>(predicted * (nc_ + 1) + truth)]; };
  std::vector<std::int64_t> pred_of(static_cast<std::size_t>(m), -1);
  std::vector<bool> pred_used(static_cast<std::size_t>(n), false);
  if (n > 0 && m > 0) {
    const auto iou = pairwise_box_iou(lab.narrow(1, 1, 4), pred.narrow(1, 0, 4)).contiguous();
    auto o = iou.accessor<float, 2>();
    struct Pair {
      float iou;
      std::int64_t label, pred;
    };
    std::vector<Pair> pairs;  // any classes: the matrix shows which class a box was taken for
    for (std::int64_t j = 0; j < m; ++j) {
      for (std::int64_t i = 0; i < n; ++i) {
        if (o[j][i] > iou_) pairs.push_back({o[j][i], j, i});
      }
    }
    std::stable_sort(pairs.begin(), pairs.end(), [](const Pair& a, const Pair& b) { return a.iou > b.iou; });
    // First each prediction keeps its highest-IoU label, then each label its highest-IoU
    // prediction among those left: Ultralytics' two passes, not one greedy pass, so a
    // prediction that lost its best label stays unmatched (a false positive) there too.
    std::vector<bool> pred_seen(static_cast<std::size_t>(n), false);
    std::vector<Pair> kept;
    for (const auto& pr : pairs) {
      if (pred_seen[static_cast<std::size_t>(pr.pred)]) continue;
      pred_seen[static_cast<std::size_t>(pr.pred)] = true;
      kept.push_back(pr);
    }
    for (const auto& pr : kept) {
      if (pred_of[static_cast<std::size_t>(pr.label)] >= 0) continue;
      pred_of[static_cast<std::size_t>(pr.label)] = pr.pred;
      pred_used[static_cast<std::size_t>(pr.pred)] = true;
    }
  }
  for (std::int64_t j = 0; j < m; ++j) {
    const int truth = cls_of(l[j][0]);
    const auto i = pred_of[static_cast<std::size_t>(j)];
    add(i >= 0 ? cls_of(p[i][5]) : nc_, truth);
  }
  for (std::int64_t i = 0; i < n; ++i) {
    if (!pred_used[static_cast<std::size_t>(i)]) add(cls_of(p[i][5]), nc_);
  }
}

void plot_confusion_matrix(const ConfusionMatrix& matrix, const std::vector<std::string>& names, bool normalized,
                           const std::string& png_path) {
  const int k = matrix.nc() + 1;
  std::vector<double> values = normalized ? matrix.normalized() : std::vector<double>(static_cast<std::size_t>(k * k));
  double top = 0;
  for (int r = 0; r < k; ++r) {
    for (int c = 0; c < k; ++c) {
      auto& v = values[static_cast<std::size_t>(r * k + c)];
      if (!normalized) v = static_cast<double>(matrix.at(r, c));
      top = std::max(top, v);
    }
  }
  const bool show_names = k <= 61;
  const bool annotate = k <= 31;  // numbers in the cells while they fit
  const int label_w = show_names ? 150 : 40;
  const int side = 1100;
  const int cell = std::max(1, side / k);
  const int grid = cell * k;
  const int left = label_w + 60, top_margin = 70, bottom = label_w + 60, right = 140;
  cv::Mat canvas(top_margin + grid + bottom, left + grid + right, CV_8UC3, cv::Scalar(255, 255, 255));
  auto name_of = [&](int c) {
    if (c == k - 1) return std::string("background");
    return c < static_cast<int>(names.size()) ? names[static_cast<std::size_t>(c)] : std::to_string(c);
  };
  for (int r = 0; r < k; ++r) {
    for (int c = 0; c < k; ++c) {
      const double v = values[static_cast<std::size_t>(r * k + c)];
      const double t = top > 0 ? v / top : 0.0;
      const cv::Rect box(left + c * cell, top_margin + r * cell, cell, cell);
      cv::rectangle(canvas, box, blues(t), cv::FILLED);
      if (annotate && v >= 0.005) {
        char text[32];
        std::snprintf(text, sizeof(text), normalized ? "%.2f" : "%.0f", v);
        const double scale = std::min(0.45, cell / 80.0);
        put_centred(canvas, text, {box.x + cell / 2, box.y + cell / 2}, scale,
                    t > 0.5 ? cv::Scalar(255, 255, 255) : cv::Scalar(30, 30, 30));
      }
    }
  }
  cv::rectangle(canvas, cv::Rect(left, top_margin, grid, grid), cv::Scalar(120, 120, 120), 1);
  if (show_names) {
    const double scale = std::min(0.45, cell / 30.0);
    for (int c = 0; c < k; ++c) {
      // Row names on the left, column names under the grid turned upright (read bottom-up).
      put_right_aligned(canvas, name_of(c), {left - 6, top_margin + c * cell + cell / 2}, scale, cv::Scalar(30, 30, 30));
      put_vertical(canvas, name_of(c), {left + c * cell + cell / 2, top_margin + grid + 6}, scale, cv::Scalar(30, 30, 30));
    }
  }
  put_centred(canvas, normalized ? "Confusion Matrix Normalized" : "Confusion Matrix", {left + grid / 2, 35}, 0.8,
              cv::Scalar(20, 20, 20));
  put_centred(canvas, "True", {left + grid / 2, canvas.rows - 20}, 0.6, cv::Scalar(20, 20, 20));
  put_vertical(canvas, "Predicted", {20, top_margin + grid / 2 - 45}, 0.6, cv::Scalar(20, 20, 20));
  // The colour scale beside the grid.
  const cv::Rect bar(left + grid + 30, top_margin, 24, grid);
  for (int y = 0; y < bar.height; ++y) {
    const double t = 1.0 - static_cast<double>(y) / std::max(bar.height - 1, 1);
    cv::line(canvas, {bar.x, bar.y + y}, {bar.x + bar.width - 1, bar.y + y}, blues(t));
  }
  cv::rectangle(canvas, bar, cv::Scalar(120, 120, 120), 1);
  char hi[32];
  std::snprintf(hi, sizeof(hi), normalized ? "%.2f" : "%.0f", top);
  cv::putText(canvas, hi, {bar.x + bar.width + 6, bar.y + 10}, cv::FONT_HERSHEY_SIMPLEX, 0.45, cv::Scalar(30, 30, 30), 1,
              cv::LINE_AA);
  cv::putText(canvas, "0", {bar.x + bar.width + 6, bar.y + bar.height}, cv::FONT_HERSHEY_SIMPLEX, 0.45,
              cv::Scalar(30, 30, 30), 1, cv::LINE_AA);
  write_image_file(png_path, canvas);
}

}  // namespace yoloflow::core
