#include "detection_metrics.h"

#include <algorithm>
#include <array>
#include <climits>
#include <map>
#include <numeric>
#include <set>
#include <string>

#include "box_iou.h"
#include "yoloflow/error.h"

namespace yoloflow::detection_eval {
namespace {

constexpr int kThresholds = 10;  // IoU 0.50:0.05:0.95
constexpr int kCurve = 1000;     // points of the P and R curves over confidence 0..1

// The thresholds as float32 values of an evenly spaced range, the values a float32 IoU is
// compared with (a pair at IoU 0.7 exactly counts at 0.70).
const std::array<float, kThresholds>& iou_thresholds() {
  static const std::array<float, kThresholds> t = [] {
    std::array<float, kThresholds> out{};
    const auto v = torch::linspace(0.5, 0.95, kThresholds, torch::kFloat);
    for (int i = 0; i < kThresholds; ++i) out[static_cast<std::size_t>(i)] = v[i].item<float>();
    return out;
  }();
  return t;
}

// `n` evenly spaced points from 0 to 1 computed as numpy.linspace does (i * step, last
// exactly 1): a recall that lands exactly on a sample point must fall on the same side.
std::vector<double> unit_linspace(int n) {
  std::vector<double> x(static_cast<std::size_t>(n));
  const double step = 1.0 / (n - 1);
  for (int i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = i * step;
  x.back() = 1.0;
  return x;
}

// numpy.interp: piecewise-linear through (xp, fp), xp non-decreasing (repeated values make
// a vertical step: x on it takes the value of its last point); `left`/`right` outside.
double interp(double x, const std::vector<double>& xp, const std::vector<double>& fp, double left, double right) {
  const std::size_t n = xp.size();
  if (x > xp.back()) return right;
  if (x < xp.front()) return left;
  const auto j = static_cast<std::size_t>(std::upper_bound(xp.begin(), xp.end(), x) - xp.begin()) - 1;
  if (j == n - 1 || xp[j] == x) return fp[j];
  const double slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j]);
  return slope * (x - xp[j]) + fp[j];
}

// Area under the precision envelope of one class at one threshold. The curve starts at
// (0, 1) and drops to 0 at the last recall reached; sampled at 101 recall points and
// integrated with the trapezoidal rule.
double average_precision(const std::vector<double>& recall, const std::vector<double>& precision) {
  std::vector<double> mrec{0.0}, mpre{1.0};
  mrec.insert(mrec.end(), recall.begin(), recall.end());
  mpre.insert(mpre.end(), precision.begin(), precision.end());
  mrec.push_back(recall.back());
  mpre.push_back(0.0);
  mrec.push_back(1.0);
  mpre.push_back(0.0);
  for (std::size_t i = mpre.size() - 1; i > 0; --i) mpre[i - 1] = std::max(mpre[i - 1], mpre[i]);
  static const std::vector<double> x = unit_linspace(101);
  double ap = 0.0, prev = interp(x[0], mrec, mpre, mpre.front(), mpre.back());
  for (std::size_t i = 1; i < x.size(); ++i) {
    const double y = interp(x[i], mrec, mpre, mpre.front(), mpre.back());
    ap += (x[i] - x[i - 1]) * (prev + y) / 2.0;
    prev = y;
  }
  return ap;
}

// Moving average of width 2*round(n*f)+1 with edge padding (the F1 curve's smoothing).
std::vector<double> smooth(const std::vector<double>& y, double f) {
  const int nf = static_cast<int>(std::lround(y.size() * f * 2)) / 2 + 1;
  const int half = nf / 2;
  std::vector<double> padded(static_cast<std::size_t>(half), y.front());
  padded.insert(padded.end(), y.begin(), y.end());
  padded.insert(padded.end(), static_cast<std::size_t>(half), y.back());
  std::vector<double> out(y.size());
  const double w = 1.0 / nf;
  for (std::size_t i = 0; i < y.size(); ++i) {
    double s = 0;
    for (int k = 0; k < nf; ++k) s += padded[i + static_cast<std::size_t>(k)] * w;
    out[i] = s;
  }
  return out;
}

}  // namespace

DetectionMetrics::DetectionMetrics(int nc) : nc_(nc), label_images_(static_cast<std::size_t>(std::max(nc, 0)), 0) {}

MatchedDetections DetectionMetrics::matched(const std::string& family) const {
  MatchedDetections m;
  m.family = family;
  m.scores = scores_;
  m.classes = pred_cls_;
  m.correct.reserve(correct_.size());
  for (const auto bits : correct_) m.correct.push_back(static_cast<std::uint8_t>(bits & 1u));  // bit 0: IoU 0.50
  m.label_classes = label_cls_;
  return m;
}

void DetectionMetrics::reset() {
  correct_.clear();
  scores_.clear();
  pred_cls_.clear();
  label_cls_.clear();
  std::fill(label_images_.begin(), label_images_.end(), 0);
  images_ = 0;
}

void DetectionMetrics::add_image(const torch::Tensor& predictions, const torch::Tensor& labels) {
  add_image(predictions, labels, torch::Tensor());
}

void DetectionMetrics::add_image(const torch::Tensor& predictions, const torch::Tensor& labels,
                                 const torch::Tensor& given_iou) {
  auto pred = predictions.defined() && predictions.numel() > 0
                  ? predictions.to(torch::kCPU, torch::kFloat).reshape({-1, 6})
                  : torch::zeros({0, 6});
  auto lab = labels.defined() && labels.numel() > 0 ? labels.to(torch::kCPU, torch::kFloat).reshape({-1, 5})
                                                    : torch::zeros({0, 5});
  torch::Tensor overlap;  // (M, N) in the arrival order of the predictions
  if (given_iou.defined()) {
    if (given_iou.numel() != lab.size(0) * pred.size(0)) {
      throw Error("DetectionMetrics: an overlap of " + std::to_string(given_iou.numel()) + " values for " +
                  std::to_string(lab.size(0)) + " labels and " + std::to_string(pred.size(0)) + " predictions");
    }
    overlap = given_iou.to(torch::kCPU, torch::kFloat).reshape({lab.size(0), pred.size(0)});
  } else if (lab.size(0) > 0 && pred.size(0) > 0) {
    overlap = bbox_iou_matrix(lab.narrow(1, 1, 4), pred.narrow(1, 0, 4));
  }
  // Score order, ties kept in arrival order: matching prefers the earlier prediction.
  if (pred.size(0) > 1) {
    const auto order = std::get<1>(pred.select(1, 4).sort(/*stable=*/true, 0, true));
    pred = pred.index_select(0, order);
    if (overlap.defined()) overlap = overlap.index_select(1, order);
  }
  pred = pred.contiguous();
  lab = lab.contiguous();
  const auto n = pred.size(0), m = lab.size(0);
  auto p = pred.accessor<float, 2>();
  auto l = lab.accessor<float, 2>();
  auto check_class = [&](float c, const char* what) {
    if (c < 0 || c >= nc_) {
      throw Error("DetectionMetrics: " + std::string(what) + " class " + std::to_string(c) + " is outside 0.." +
                  std::to_string(nc_ - 1) + ".");
    }
  };
  for (int64_t j = 0; j < m; ++j) check_class(l[j][0], "label");
  for (int64_t i = 0; i < n; ++i) check_class(p[i][5], "prediction");
  ++images_;
  std::set<int> classes_here;
  for (int64_t j = 0; j < m; ++j) {
    label_cls_.push_back(static_cast<int>(l[j][0]));
    classes_here.insert(static_cast<int>(l[j][0]));
  }
  for (int c : classes_here) ++label_images_[static_cast<std::size_t>(c)];
  if (n == 0) return;

  std::vector<std::uint16_t> correct(static_cast<std::size_t>(n), 0);
  if (m > 0) {
    const auto& thr = iou_thresholds();
    const auto iou = overlap.contiguous();  // (M, N), float32
    auto iu = iou.accessor<float, 2>();
    struct Pair {
      float iou;
      int label, pred;
    };
    std::vector<Pair> pairs;  // same-class pairs at or above the lowest threshold
    for (int64_t j = 0; j < m; ++j) {
      for (int64_t i = 0; i < n; ++i) {
        if (static_cast<int>(l[j][0]) == static_cast<int>(p[i][5]) && iu[j][i] >= thr[0]) {
          pairs.push_back({iu[j][i], static_cast<int>(j), static_cast<int>(i)});
        }
      }
    }
    std::stable_sort(pairs.begin(), pairs.end(), [](const Pair& a, const Pair& b) { return a.iou > b.iou; });
    std::vector<int> label_of(static_cast<std::size_t>(n)), pred_of(static_cast<std::size_t>(m));
    for (int t = 0; t < kThresholds; ++t) {
      // Each prediction's highest-IoU label...
      std::fill(label_of.begin(), label_of.end(), -1);
      for (const auto& pr : pairs) {
        if (pr.iou < thr[static_cast<std::size_t>(t)]) break;
        if (label_of[static_cast<std::size_t>(pr.pred)] < 0) label_of[static_cast<std::size_t>(pr.pred)] = pr.label;
      }
      // ...then each label's highest-scored prediction among those that chose it.
      std::fill(pred_of.begin(), pred_of.end(), INT_MAX);
      for (int i = 0; i < static_cast<int>(n); ++i) {
        const int j = label_of[static_cast<std::size_t>(i)];
        if (j >= 0) pred_of[static_cast<std::size_t>(j)] = std::min(pred_of[static_cast<std::size_t>(j)], i);
      }
      for (int j = 0; j < static_cast<int>(m); ++j) {
        if (pred_of[static_cast<std::size_t>(j)] != INT_MAX) {
          correct[static_cast<std::size_t>(pred_of[static_cast<std::size_t>(j)])] |= static_cast<std::uint16_t>(1u << t);
        }
      }
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    correct_.push_back(correct[static_cast<std::size_t>(i)]);
    scores_.push_back(p[i][4]);
    pred_cls_.push_back(static_cast<int>(p[i][5]));
  }
}

MetricsResult DetectionMetrics::compute() const {
  MetricsResult res;
  res.images = images_;
  res.instances = static_cast<int>(label_cls_.size());

  std::map<int, int> label_count;  // the classes scored: those with labels
  for (int c : label_cls_) ++label_count[c];
  std::vector<std::size_t> order(scores_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return scores_[a] > scores_[b]; });

  static const std::vector<double> px = unit_linspace(kCurve);
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
        ((correct_[i] >> t) & 1u ? tpc[t] : fpc[t]) += 1.0;
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
    p_curves.push_back(std::move(pc));
    r_curves.push_back(std::move(rc));
    aps.push_back(ap);
  }

  const auto k = p_curves.size();
  if (k == 0) return res;
  std::vector<double> f1(kCurve, 0.0);
  for (std::size_t c = 0; c < k; ++c) {
    for (int i = 0; i < kCurve; ++i) {
      const double p = p_curves[c][i], r = r_curves[c][i];
      f1[i] += 2 * p * r / (p + r + 1e-16);
    }
  }
  for (double& v : f1) v /= static_cast<double>(k);
  const auto sm = smooth(f1, 0.1);
  const auto best = static_cast<std::size_t>(std::max_element(sm.begin(), sm.end()) - sm.begin());

  std::size_t ci = 0;
  for (const auto& [c, n_labels] : label_count) {
    ClassMetrics cm;
    cm.cls = c;
    cm.images = label_images_[static_cast<std::size_t>(c)];
    cm.instances = n_labels;
    cm.precision = p_curves[ci][best];
    cm.recall = r_curves[ci][best];
    cm.ap50 = aps[ci][0];
    double sum = 0;
    for (double a : aps[ci]) sum += a;
    cm.ap50_95 = sum / kThresholds;
    res.precision += cm.precision;
    res.recall += cm.recall;
    res.map50 += cm.ap50;
    res.map50_95 += cm.ap50_95;
    res.per_class.push_back(cm);
    ++ci;
  }
  res.precision /= static_cast<double>(k);
  res.recall /= static_cast<double>(k);
  res.map50 /= static_cast<double>(k);
  res.map50_95 /= static_cast<double>(k);
  // Ultralytics 8.4 scores a detector by mAP50-95 alone (its Metric.fitness weights P, R and
  // mAP50 with 0).
  res.fitness = res.map50_95;
  return res;
}

}  // namespace yoloflow::detection_eval
