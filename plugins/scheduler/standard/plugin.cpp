// Registers linear and cosine, Ultralytics' two learning-rate curves: the factor of the
// optimizer's lr0 goes from 1 at the first epoch towards `lrf` at the end of the run.
#include <algorithm>
#include <cmath>

#include "yoloflow/plugin.h"
#include "yoloflow/scheduler.h"

namespace yoloflow::schedulers {
namespace {

Schema lrf_schema() {
  Schema s;
  s.add_float("lrf", 0.01).greater_than(0.0).max(1.0).fixed().doc("Final learning rate as a fraction of lr0.");
  return s;
}

// (1 - epoch / epochs) * (1 - lrf) + lrf: lrf is reached after the last epoch.
class Linear final : public Scheduler {
 public:
  void configure(const Params& params, const StageContext&) override { lrf_ = params.get_float("lrf"); }
  double lr_factor(int epoch, int epochs) const override {
    const double e = epoch, n = std::max(1, epochs);
    return std::max(1.0 - e / n, 0.0) * (1.0 - lrf_) + lrf_;
  }

 private:
  double lrf_ = 0.01;
};

// Half a cosine from 1 to lrf: ((1 - cos(pi * epoch / epochs)) / 2) * (lrf - 1) + 1.
class Cosine final : public Scheduler {
 public:
  void configure(const Params& params, const StageContext&) override { lrf_ = params.get_float("lrf"); }
  double lr_factor(int epoch, int epochs) const override {
    const double e = epoch, n = std::max(1, epochs);
    return ((1.0 - std::cos(e * M_PI / n)) / 2.0) * (lrf_ - 1.0) + 1.0;
  }

 private:
  double lrf_ = 0.01;
};

void register_schedulers(Registrar& r) {
  r.add_scheduler<Linear>("linear", lrf_schema(),
                          "Linear learning-rate decay from lr0 to lr0 * lrf over the run (Ultralytics' default).");
  r.add_scheduler<Cosine>("cosine", lrf_schema(),
                          "Cosine learning-rate decay from lr0 to lr0 * lrf over the run (Ultralytics' cos_lr).");
}

}  // namespace
}  // namespace yoloflow::schedulers

YOLOFLOW_PLUGIN("scheduler_standard", "1.0.0", yoloflow::schedulers::register_schedulers)
