#pragma once
// The warmup of Ultralytics' recipe: over max(warmup_epochs * batches, 100) iterations the bias
// group's lr falls from warmup_bias_lr, the other groups' lr rise from 0, momentum rises from
// warmup_momentum, and gradient accumulation rises from 1, each linearly towards its value
// after warmup (the scheduler's lr, yoloflow/scheduler.h).
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace yoloflow::core {

struct WarmupOptions {
  double epochs = 3.0;
  double momentum = 0.8;
  double bias_lr = 0.1;
};

class Warmup {
 public:
  Warmup(WarmupOptions o, std::int64_t batches_per_epoch) : o_(o) {
    iterations_ = o_.epochs > 0
                      ? std::max<std::int64_t>(static_cast<std::int64_t>(std::llround(o_.epochs * batches_per_epoch)), 100)
                      : 0;
  }
  std::int64_t iterations() const { return iterations_; }
  bool active(std::int64_t iteration) const { return iteration <= iterations_ && iterations_ > 0; }
  // Value at `iteration` of a linear ramp from `from` (iteration 0) to `to` (end of warmup).
  double ramp(std::int64_t iteration, double from, double to) const {
    if (!active(iteration)) return to;
    const double t = static_cast<double>(iteration) / static_cast<double>(iterations_);
    return from + t * (to - from);
  }
  const WarmupOptions& options() const { return o_; }

 private:
  WarmupOptions o_;
  std::int64_t iterations_ = 0;
};

}  // namespace yoloflow::core
