#include "train/detection_metrics.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>
#include <string>

#include "train/box_ops.h"
#include "yoloflow/error.h"

namespace yoloflow::core {
namespace {

constexpr int kThresholds = 10;  // IoU 0.50:0.05:0.95
float iou_threshold(int i) { return static_cast<float>(0.5 + 0.05 * i); }

// numpy.interp: piecewise-linear through (xp, fp), xp non-decreasing; `left`/`right` outside.
double interp(double x, const std::vector<double>& xp, const std::vector<double>& fp,
              double left, double right) {
  const auto n = xp.size();
  if (x < xp.front()) return left;
  if (x > xp.back()) return right;
  if (x == xp.back()) return fp.back();
  // Last j with xp[j] <= x; then xp[j + 1] > x.
  const auto j = static_cast<std::size_t>(std::upper_bound(xp.begin(), xp.end(), x) - xp.begin()) - 1;
  if (j + 1 >= n) return fp.back();
  const double slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j]);
  return slope * (x - xp[j]) + fp[j];
}

// Area under the precision envelope, sampled at 101 recall points and integrated with the
// trapezoidal rule (COCO-style points, as Ultralytics computes it).
double average_precision(const std::vector<double>& recall, const std::vector<double>& precision) {
  std::vector<double> mrec{0.0}, mpre{1.0};
  mrec.insert(mrec.end(), recall.begin(), recall.end());
  mpre.insert(mpre.end(), precision.begin(), precision.end());
  mrec.push_back(1.0);
  mpre.push_back(0.0);
  for (std::size_t i = mpre.size() - 1; i > 0; --i) mpre[i - 1] = std::max(mpre[i - 1], mpre[i]);
  double ap = 0.0, prev = 0.0;
  for (int i = 0; i <= 100; ++i) {
    const double x = i / 100.0;
    const double y = interp(x, mrec, mpre, mpre.front(), mpre.back());
    if (i > 0) ap += 0.01 * (prev + y) / 2.0;
    prev = y;
  }
  return ap;
}

// Moving average of width 2*round(n*f)+1 with edge padding (Ultralytics' F1 smoothing).
std::vector<double> smooth(const std::vector<double>& y, double f) {
  const int nf = static_cast<int>(std::lround(y.size() * f * 2)) / 2 + 1;
  const int half = nf / 2;
  std::vector<double> padded(half, y.front());
  padded.insert(padded.end(), y.begin(), y.end());
  padded.insert(padded.end(), half, y.back());
  std::vector<double> out(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) {
    double s = 0;
    for (int k = 0; k < nf; ++k) s += padded[i + k];
    out[i] = s / nf;
  }
  return out;
}

}  // namespace

DetectionMetrics::DetectionMetrics(int nc) : nc_(nc) {}

void DetectionMetrics::reset() {
  correct_.clear();
  scores_.clear();
  pred_cls_.clear();
  label_cls_.clear();
  images_ = 0;
}

void DetectionMetrics::add_image(const torch::Tensor& predictions, const torch::Tensor& labels) {
  auto pred = predictions.defined() && predictions.numel() > 0
                  ? predictions.to(torch::kCPU, torch::kFloat).reshape({-1, 6}).contiguous()
                  : torch::zeros({0, 6});
  auto lab = labels.defined() && labels.numel() > 0
                 ? labels.to(torch::kCPU, torch::kFloat).reshape({-1, 5}).contiguous()
                 : torch::zeros({0, 5});
  ++images_;
  const auto n = pred.size(0), m = lab.size(0);
  auto p = pred.accessor<float, 2>();
  auto l = lab.accessor<float, 2>();
  auto check_class = [&](float c, const char* what) {
    if (c < 0 || c >= nc_) {
      throw Error("DetectionMetrics: " + std::string(what) + " class " + std::to_string(c) +
                  " is outside 0.." + std::to_string(nc_ - 1) + ".");
    }
  };
  for (int64_t j = 0; j < m; ++j) check_class(l[j][0], "label");
  for (int64_t i = 0; i < n; ++i) check_class(p[i][5], "prediction");
  for (int64_t j = 0; j < m; ++j) label_cls_.push_back(static_cast<int>(l[j][0]));
  if (n == 0) return;

  std::vector<std::vector<bool>> correct(static_cast<std::size_t>(n),
                                         std::vector<bool>(kThresholds, false));
  if (m > 0) {
    auto iou = bbox_iou_matrix(lab.narrow(1, 1, 4), pred.narrow(1, 0, 4));  // (M, N)
    auto iu = iou.accessor<float, 2>();
    struct Pair {
      float iou;
      int64_t label, pred;
    };
    std::vector<Pair> pairs;  // same-class pairs that pass the lowest threshold
    for (int64_t j = 0; j < m; ++j) {
      for (int64_t i = 0; i < n; ++i) {
        if (static_cast<int>(l[j][0]) == static_cast<int>(p[i][5]) && iu[j][i] >= iou_threshold(0)) {
          pairs.push_back({iu[j][i], j, i});
        }
      }
    }
    std::stable_sort(pairs.begin(), pairs.end(),
                     [](const Pair& a, const Pair& b) { return a.iou > b.iou; });
    // Greedy one-to-one matching by highest IoU, separately at each threshold.
    for (int t = 0; t < kThresholds; ++t) {
      std::vector<bool> label_used(static_cast<std::size_t>(m), false),
          pred_used(static_cast<std::size_t>(n), false);
      for (const auto& pr : pairs) {
        if (pr.iou < iou_threshold(t)) break;
        if (label_used[pr.label] || pred_used[pr.pred]) continue;
        label_used[pr.label] = pred_used[pr.pred] = true;
        correct[pr.pred][t] = true;
      }
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    correct_.push_back(correct[i]);
    scores_.push_back(p[i][4]);
    pred_cls_.push_back(static_cast<int>(p[i][5]));
  }
}

MetricsResult DetectionMetrics::compute() const {
  MetricsResult res;
  res.images = images_;
  res.instances = static_cast<int>(label_cls_.size());

  std::map<int, int> label_count;
  for (int c : label_cls_) ++label_count[c];
  std::vector<std::size_t> order(scores_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return scores_[a] > scores_[b]; });

  constexpr int kCurve = 1000;
  std::vector<double> px(kCurve);
  for (int i = 0; i < kCurve; ++i) px[i] = static_cast<double>(i) / (kCurve - 1);
  std::vector<std::vector<double>> p_curves, r_curves;
  std::vector<std::array<double, kThresholds>> aps;

  for (const auto& [c, n_labels] : label_count) {
    std::vector<double> neg_conf;
    std::array<std::vector<double>, kThresholds> recall, precision;
    std::array<double, kThresholds> tpc{}, fpc{};
    for (auto i : order) {
      if (pred_cls_[i] != c) continue;
      neg_conf.push_back(-static_cast<double>(scores_[i]));
      for (int t = 0; t < kThresholds; ++t) {
        (correct_[i][t] ? tpc[t] : fpc[t]) += 1.0;
        recall[t].push_back(tpc[t] / (n_labels + 1e-16));
        precision[t].push_back(tpc[t] / (tpc[t] + fpc[t]));
      }
    }
    std::vector<double> pc(kCurve, 0.0), rc(kCurve, 0.0);
    std::array<double, kThresholds> ap{};
    if (!neg_conf.empty()) {
      for (int i = 0; i < kCurve; ++i) {
        rc[i] = interp(-px[i], neg_conf, recall[0], 0.0, recall[0].back());
        pc[i] = interp(-px[i], neg_conf, precision[0], 1.0, precision[0].back());
      }
      for (int t = 0; t < kThresholds; ++t) ap[t] = average_precision(recall[t], precision[t]);
    }
    p_curves.push_back(pc);
    r_curves.push_back(rc);
    aps.push_back(ap);
  }

  const auto k = p_curves.size();
  std::size_t best = 0;
  if (k > 0) {
    std::vector<double> f1(kCurve, 0.0);
    for (std::size_t c = 0; c < k; ++c) {
      for (int i = 0; i < kCurve; ++i) {
        const double p = p_curves[c][i], r = r_curves[c][i];
        f1[i] += 2 * p * r / (p + r + 1e-16) / static_cast<double>(k);
      }
    }
    auto sm = smooth(f1, 0.1);
    best = static_cast<std::size_t>(std::max_element(sm.begin(), sm.end()) - sm.begin());
  }

  std::map<int, ClassMetrics> per_class;
  std::size_t ci = 0;
  for (const auto& [c, n_labels] : label_count) {
    ClassMetrics cm;
    cm.cls = c;
    cm.instances = n_labels;
    cm.precision = p_curves[ci][best];
    cm.recall = r_curves[ci][best];
    cm.ap50 = aps[ci][0];
    double sum = 0;
    for (double a : aps[ci]) sum += a;
    cm.ap50_95 = sum / kThresholds;
    res.precision += cm.precision / k;
    res.recall += cm.recall / k;
    res.map50 += cm.ap50 / k;
    res.map50_95 += cm.ap50_95 / k;
    per_class[c] = cm;
    ++ci;
  }
  // Classes predicted but never labelled: reported, with nothing to score.
  for (int c : pred_cls_) {
    if (!per_class.count(c)) {
      ClassMetrics cm;
      cm.cls = c;
      per_class[c] = cm;
    }
  }
  for (auto& [c, cm] : per_class) res.per_class.push_back(cm);
  res.fitness = 0.1 * res.map50 + 0.9 * res.map50_95;
  return res;
}

}  // namespace yoloflow::core
