#include "training/export/activation_calibration.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "yoloflow/error.h"

namespace yoloflow::core {
namespace {

constexpr int kLevels = 128;  // int8's non-negative levels, TensorRT's target bin count

// Moves a little mass onto the empty bins, so the divergence stays finite (as TensorRT and
// ONNX Runtime's entropy calibrators smooth theirs).
void smooth(std::vector<double>& p) {
  constexpr double eps = 1e-4;
  std::size_t zeros = 0;
  for (double v : p) zeros += v == 0.0;
  const std::size_t nonzero = p.size() - zeros;
  if (zeros == 0 || nonzero == 0) return;
  const double take = eps * static_cast<double>(zeros) / static_cast<double>(nonzero);
  for (double& v : p) v = v == 0.0 ? eps : std::max(v - take, eps * 0.5);
}

double kl_divergence(const std::vector<double>& hist, int i) {
  std::vector<double> p(hist.begin(), hist.begin() + i);
  double outliers = 0;
  for (std::size_t k = static_cast<std::size_t>(i); k < hist.size(); ++k) outliers += hist[k];
  p.back() += outliers;  // what clips lands in the last level
  // The first i bins merged into kLevels levels, each level spread back over its non-empty bins.
  const int merged = i / kLevels;
  std::vector<double> q(static_cast<std::size_t>(i), 0.0);
  for (int j = 0; j < kLevels; ++j) {
    const int start = j * merged, stop = j == kLevels - 1 ? i : start + merged;
    double sum = 0;
    int nonzero = 0;
    for (int k = start; k < stop; ++k) {
      sum += hist[static_cast<std::size_t>(k)];
      nonzero += hist[static_cast<std::size_t>(k)] != 0.0;
    }
    if (nonzero == 0) continue;
    for (int k = start; k < stop; ++k) {
      if (hist[static_cast<std::size_t>(k)] != 0.0) q[static_cast<std::size_t>(k)] = sum / nonzero;
    }
  }
  auto normalise = [](std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    if (s > 0) {
      for (double& x : v) x /= s;
    }
  };
  normalise(p);
  normalise(q);
  smooth(p);
  smooth(q);
  double kl = 0;
  for (std::size_t k = 0; k < p.size(); ++k) {
    if (p[k] > 0) kl += p[k] * std::log(p[k] / q[k]);
  }
  return kl;
}

}  // namespace

CalibrationMethod parse_calibration_method(const std::string& name, const std::string& option) {
  if (name == "minmax") return CalibrationMethod::MinMax;
  if (name == "percentile") return CalibrationMethod::Percentile;
  if (name == "entropy") return CalibrationMethod::Entropy;
  throw InvalidInput(option + " " + name + ": the calibration methods are minmax, percentile and entropy");
}

const char* calibration_method_name(CalibrationMethod m) {
  switch (m) {
    case CalibrationMethod::MinMax: return "minmax";
    case CalibrationMethod::Percentile: return "percentile";
    case CalibrationMethod::Entropy: return "entropy";
  }
  return "?";
}

void ActivationHistogram::add(const torch::Tensor& x) {
  torch::NoGradGuard no_grad;
  const auto a = x.detach().to(torch::kFloat).abs().reshape(-1);
  if (a.numel() == 0) return;
  const double m = a.max().item<double>();
  if (!std::isfinite(m)) throw Error("calibration: an activation is not finite (inf or NaN) on a calibration image");
  amax_ = std::max(amax_, m);
  if (range_ == 0) range_ = m > 0 ? m : 1.0;
  while (m > range_) {
    // Twice the range: bin k of the new histogram holds old bins 2k and 2k + 1.
    for (int k = 0; k < kBins / 2; ++k) bins_[k] = bins_[2 * k] + bins_[2 * k + 1];
    std::fill(bins_.begin() + kBins / 2, bins_.end(), 0.0);
    range_ *= 2;
  }
  const auto h = torch::histc(a, kBins, 0.0, range_).to(torch::kDouble).contiguous();
  const double* p = h.data_ptr<double>();
  for (int k = 0; k < kBins; ++k) bins_[k] += p[k];
  count_ += a.numel();
}

double ActivationHistogram::threshold(CalibrationMethod method, double percentile) const {
  if (amax_ <= 0) return 1.0;
  const double width = range_ / kBins;
  // The histogram's extent may exceed amax by up to twice; no threshold goes beyond amax.
  switch (method) {
    case CalibrationMethod::MinMax: return amax_;
    case CalibrationMethod::Percentile: {
      double total = 0;
      for (double v : bins_) total += v;
      const double want = total * percentile / 100.0;
      double cum = 0;
      for (int k = 0; k < kBins; ++k) {
        cum += bins_[k];
        if (cum >= want) return std::min(amax_, (k + 1) * width);
      }
      return amax_;
    }
    case CalibrationMethod::Entropy: {
      // Only the bins up to amax take part: beyond it the histogram is empty.
      const int used = std::clamp(static_cast<int>(std::ceil(amax_ / width)), 1, kBins);
      const std::vector<double> hist(bins_.begin(), bins_.begin() + used);
      if (used <= kLevels) return amax_;
      double best = std::numeric_limits<double>::infinity();
      int best_i = used;
      for (int i = kLevels; i <= used; ++i) {
        const double kl = kl_divergence(hist, i);
        if (kl < best) {
          best = kl;
          best_i = i;
        }
      }
      return std::min(amax_, (best_i + 0.5) * width);
    }
  }
  return amax_;
}

}  // namespace yoloflow::core
