#pragma once
// Learning-rate and momentum schedule of Ultralytics' recipe: a per-epoch factor (linear or
// cosine from 1 to lrf) and a warmup over max(warmup_epochs * batches, 100) iterations in
// which the bias group's lr falls from warmup_bias_lr, the other groups' lr rise from 0,
// momentum rises from warmup_momentum, and gradient accumulation rises from 1.
#include <cmath>
#include <cstdint>

namespace yoloflow::core {

struct LrScheduleOptions {
  int epochs = 100;
  double lrf = 0.01;
  bool cosine = false;
  double warmup_epochs = 3.0;
  double warmup_momentum = 0.8;
  double warmup_bias_lr = 0.1;
};

class LrSchedule {
 public:
  LrSchedule(LrScheduleOptions o, std::int64_t batches_per_epoch) : o_(o), nb_(batches_per_epoch) {
    nw_ = o_.warmup_epochs > 0
              ? std::max<std::int64_t>(static_cast<std::int64_t>(std::llround(o_.warmup_epochs * nb_)), 100)
              : 0;
  }
  // Epoch factor applied to each group's initial lr.
  double factor(int epoch) const {
    const double e = epoch, E = std::max(1, o_.epochs);
    if (o_.cosine) return ((1.0 - std::cos(e * M_PI / E)) / 2.0) * (o_.lrf - 1.0) + 1.0;
    return std::max(1.0 - e / E, 0.0) * (1.0 - o_.lrf) + o_.lrf;
  }
  std::int64_t warmup_iterations() const { return nw_; }
  bool warming_up(std::int64_t iteration) const { return iteration <= nw_ && nw_ > 0; }
  // Value at `iteration` of a linear ramp from `from` (iteration 0) to `to` (end of warmup).
  double ramp(std::int64_t iteration, double from, double to) const {
    if (!warming_up(iteration)) return to;
    const double t = static_cast<double>(iteration) / static_cast<double>(nw_);
    return from + t * (to - from);
  }
  const LrScheduleOptions& options() const { return o_; }

 private:
  LrScheduleOptions o_;
  std::int64_t nb_;
  std::int64_t nw_ = 0;
};

}  // namespace yoloflow::core
