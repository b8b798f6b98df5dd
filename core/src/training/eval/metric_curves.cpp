#include "training/eval/metric_curves.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <numeric>

namespace yoloflow::core {
namespace {

// 0..1 in `n` even steps, the last exactly 1 (numpy's linspace: a value on a sample point
// falls on the same side as there).
std::vector<double> unit_steps(int n) {
  std::vector<double> x(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = i * (1.0 / (n - 1));
  x.back() = 1.0;
  return x;
}

// Piecewise-linear through (xp, fp), xp non-decreasing; `left` below xp's first value, `right`
// above its last; on a run of equal xp the run's last value (a vertical step).
double linear_at(double x, const std::vector<double>& xp, const std::vector<double>& fp, double left, double right) {
  if (xp.empty()) return left;
  if (x < xp.front()) return left;
  if (x > xp.back()) return right;
  const auto j = static_cast<std::size_t>(std::upper_bound(xp.begin(), xp.end(), x) - xp.begin()) - 1;
  if (j + 1 >= xp.size() || xp[j] == x) return fp[j];
  return fp[j] + (fp[j + 1] - fp[j]) * (x - xp[j]) / (xp[j + 1] - xp[j]);
}

// The precision envelope of a class's cumulative recall and precision, with its end points:
// (0, 1) first, precision 0 past the last recall reached.
void envelope(const std::vector<double>& recall, const std::vector<double>& precision, std::vector<double>& mrec,
              std::vector<double>& mpre) {
  mrec = {0.0};
  mpre = {1.0};
  mrec.insert(mrec.end(), recall.begin(), recall.end());
  mpre.insert(mpre.end(), precision.begin(), precision.end());
  mrec.push_back(recall.empty() ? 0.0 : recall.back());
  mpre.push_back(0.0);
  mrec.push_back(1.0);
  mpre.push_back(0.0);
  for (std::size_t i = mpre.size() - 1; i > 0; --i) mpre[i - 1] = std::max(mpre[i - 1], mpre[i]);
}

}  // namespace

double MetricCurves::map50() const {
  if (ap50.empty()) return 0.0;
  return std::accumulate(ap50.begin(), ap50.end(), 0.0) / static_cast<double>(ap50.size());
}

std::vector<bool> true_positives(const torch::Tensor& predictions, const std::vector<int>& label_cls,
                                 const torch::Tensor& iou, float threshold) {
  const auto n = predictions.defined() ? predictions.size(0) : 0;
  const auto m = static_cast<std::int64_t>(label_cls.size());
  std::vector<bool> tp(static_cast<std::size_t>(n), false);
  if (n == 0 || m == 0) return tp;
  const auto pred = predictions.to(torch::kCPU, torch::kFloat).contiguous();
  const auto overlap = iou.to(torch::kCPU, torch::kFloat).reshape({m, n}).contiguous();
  auto p = pred.accessor<float, 2>();
  auto o = overlap.accessor<float, 2>();
  // Score order, ties in arrival order: a label goes to the higher-scored prediction.
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) { return p[a][4] > p[b][4]; });
  std::vector<std::int64_t> rank(static_cast<std::size_t>(n));
  for (std::int64_t r = 0; r < n; ++r) rank[static_cast<std::size_t>(order[static_cast<std::size_t>(r)])] = r;
  // Each prediction's highest-IoU same-class label at or above the threshold (the first on ties,
  // labels in score order of the pairs as the evaluators sort them stably by IoU).
  struct Pair {
    float iou;
    std::int64_t label, rank;
  };
  std::vector<Pair> pairs;
  for (std::int64_t j = 0; j < m; ++j) {
    for (std::int64_t i = 0; i < n; ++i) {
      if (static_cast<int>(p[i][5]) == label_cls[static_cast<std::size_t>(j)] && o[j][i] >= threshold) {
        pairs.push_back({o[j][i], j, rank[static_cast<std::size_t>(i)]});
      }
    }
  }
  // The evaluators build pairs with predictions already in score order; sort likewise.
  std::stable_sort(pairs.begin(), pairs.end(),
                   [](const Pair& a, const Pair& b) { return a.label != b.label ? a.label < b.label : a.rank < b.rank; });
  std::stable_sort(pairs.begin(), pairs.end(), [](const Pair& a, const Pair& b) { return a.iou > b.iou; });
  std::vector<std::int64_t> label_of(static_cast<std::size_t>(n), -1);
  for (const auto& pr : pairs) {
    if (label_of[static_cast<std::size_t>(pr.rank)] < 0) label_of[static_cast<std::size_t>(pr.rank)] = pr.label;
  }
  std::vector<std::int64_t> best(static_cast<std::size_t>(m), INT64_MAX);
  for (std::int64_t r = 0; r < n; ++r) {
    const auto j = label_of[static_cast<std::size_t>(r)];
    if (j >= 0) best[static_cast<std::size_t>(j)] = std::min(best[static_cast<std::size_t>(j)], r);
  }
  for (std::int64_t j = 0; j < m; ++j) {
    const auto r = best[static_cast<std::size_t>(j)];
    if (r != INT64_MAX) tp[static_cast<std::size_t>(order[static_cast<std::size_t>(r)])] = true;
  }
  return tp;
}

MetricCurves metric_curves(std::vector<ScoredPrediction> predictions, const std::vector<int>& label_cls) {
  MetricCurves out;
  out.x = unit_steps(kCurvePoints);
  std::map<int, int> counts;
  for (int c : label_cls) ++counts[c];
  std::stable_sort(predictions.begin(), predictions.end(),
                   [](const ScoredPrediction& a, const ScoredPrediction& b) { return a.score > b.score; });
  const double eps = 1e-16;
  for (const auto& [cls, n_labels] : counts) {
    out.classes.push_back(cls);
    out.instances.push_back(n_labels);
    std::vector<double> neg_conf, recall, precision;  // in descending score: -conf ascending
    double tpc = 0, fpc = 0;
    for (const auto& p : predictions) {
      if (p.cls != cls) continue;
      (p.tp ? tpc : fpc) += 1;
      neg_conf.push_back(-static_cast<double>(p.score));
      recall.push_back(tpc / (n_labels + eps));
      precision.push_back(tpc / (tpc + fpc));
    }
    std::vector<double> pc(kCurvePoints, 0.0), rc(kCurvePoints, 0.0), fc(kCurvePoints, 0.0), prc(kCurvePoints, 0.0);
    double ap = 0.0;
    if (!neg_conf.empty()) {
      for (int k = 0; k < kCurvePoints; ++k) {
        const double q = -out.x[static_cast<std::size_t>(k)];
        // Above the highest score nothing is predicted: recall 0, precision 1 (Ultralytics' choice).
        rc[static_cast<std::size_t>(k)] = linear_at(q, neg_conf, recall, 0.0, recall.back());
        pc[static_cast<std::size_t>(k)] = linear_at(q, neg_conf, precision, 1.0, precision.back());
      }
      std::vector<double> mrec, mpre;
      envelope(recall, precision, mrec, mpre);
      static const std::vector<double> x101 = unit_steps(101);
      double prev = linear_at(x101[0], mrec, mpre, mpre.front(), mpre.back());
      for (std::size_t i = 1; i < x101.size(); ++i) {
        const double y = linear_at(x101[i], mrec, mpre, mpre.front(), mpre.back());
        ap += (x101[i] - x101[i - 1]) * (prev + y) / 2.0;
        prev = y;
      }
      for (int k = 0; k < kCurvePoints; ++k) {
        prc[static_cast<std::size_t>(k)] = linear_at(out.x[static_cast<std::size_t>(k)], mrec, mpre, mpre.front(), mpre.back());
      }
    }
    // A class with labels and no prediction keeps zero curves (Ultralytics leaves its PR curve
    // out; kept here at 0 so the mean's area stays the mAP50 the class lowers).
    for (int k = 0; k < kCurvePoints; ++k) {
      const auto i = static_cast<std::size_t>(k);
      fc[i] = 2 * pc[i] * rc[i] / (pc[i] + rc[i] + eps);
    }
    if (neg_conf.empty()) std::fill(pc.begin(), pc.end(), 0.0);
    out.precision.push_back(std::move(pc));
    out.recall.push_back(std::move(rc));
    out.f1.push_back(std::move(fc));
    out.pr.push_back(std::move(prc));
    out.ap50.push_back(ap);
  }
  return out;
}

std::vector<double> mean_curve(const std::vector<std::vector<double>>& curves) {
  if (curves.empty()) return std::vector<double>(kCurvePoints, 0.0);
  std::vector<double> out(curves.front().size(), 0.0);
  for (const auto& c : curves) {
    for (std::size_t i = 0; i < out.size() && i < c.size(); ++i) out[i] += c[i];
  }
  for (auto& v : out) v /= static_cast<double>(curves.size());
  return out;
}

std::vector<double> smooth_curve(const std::vector<double>& y, double f) {
  if (y.empty()) return y;
  const int nf = static_cast<int>(std::lround(static_cast<double>(y.size()) * f * 2)) / 2 + 1;
  const int half = nf / 2;
  std::vector<double> padded(static_cast<std::size_t>(half), y.front());
  padded.insert(padded.end(), y.begin(), y.end());
  padded.insert(padded.end(), static_cast<std::size_t>(half), y.back());
  std::vector<double> out(y.size(), 0.0);
  for (std::size_t i = 0; i < y.size(); ++i) {
    double s = 0;
    for (int k = 0; k < nf; ++k) s += padded[i + static_cast<std::size_t>(k)];
    out[i] = s / nf;
  }
  return out;
}

double curve_area(const std::vector<double>& x, const std::vector<double>& y) {
  double a = 0;
  for (std::size_t i = 1; i < x.size() && i < y.size(); ++i) a += (x[i] - x[i - 1]) * (y[i] + y[i - 1]) / 2.0;
  return a;
}

}  // namespace yoloflow::core
