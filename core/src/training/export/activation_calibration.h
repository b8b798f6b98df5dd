#pragma once
// The range of each activation an int8 file quantizes, measured on calibration images: a
// histogram of |x| per tensor, then the threshold the chosen method picks. Activations are
// quantized symmetrically (zero point 0, scale = threshold / 127), which is what TensorRT
// requires and ONNX Runtime accepts.
//   minmax      the largest |x| seen: nothing clips, rare outliers cost resolution everywhere;
//   percentile  the |x| below which 99.99 % of the values lie: the outliers clip;
//   entropy     the threshold whose 128-level quantized histogram is closest to the float one
//               (smallest Kullback-Leibler divergence, TensorRT's entropy calibration).
#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace yoloflow::core {

enum class CalibrationMethod { MinMax, Percentile, Entropy };

// "minmax", "percentile", "entropy"; throws InvalidInput naming `option` otherwise.
CalibrationMethod parse_calibration_method(const std::string& name, const std::string& option);
const char* calibration_method_name(CalibrationMethod m);

class ActivationHistogram {
 public:
  static constexpr int kBins = 2048;
  // Adds every element's |x|. The range grows by doubling (adjacent bins merged), so earlier
  // batches keep their exact counts at the coarser resolution.
  void add(const torch::Tensor& x);
  double amax() const { return amax_; }
  std::int64_t count() const { return count_; }
  // The clipping threshold |x| of `method` (> 0; the largest |x| for an all-zero tensor's 1).
  double threshold(CalibrationMethod method, double percentile = 99.99) const;

 private:
  double range_ = 0, amax_ = 0;
  std::int64_t count_ = 0;
  std::vector<double> bins_ = std::vector<double>(kBins, 0.0);
};

}  // namespace yoloflow::core
