#include "training/trainer/time_budget.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "runtime/util/text_format.h"
#include "yoloflow/log.h"

namespace yoloflow::core {

namespace {

// The pipeline's own ceiling on epochs: a plan beyond it could not be written back as one.
constexpr int kMostEpochs = 100000;

}  // namespace

int epochs_within_budget(double budget_seconds, double elapsed_seconds, int epochs_done) {
  const int done = std::max(epochs_done, 0);
  if (done == 0 || !(elapsed_seconds > 0.0)) return kMostEpochs;
  const double mean = elapsed_seconds / static_cast<double>(done);
  const double fit = std::ceil(budget_seconds / mean);
  // Compared as doubles: a tiny mean must not overflow the int.
  if (!(fit < static_cast<double>(kMostEpochs))) return std::max(kMostEpochs, done);
  return std::max(static_cast<int>(fit), done);
}

int TimeBudget::plan(int epoch, int first_epoch, int epochs, double end_seconds) const {
  const int done = epoch + 1 - first_epoch;
  const double projected = elapsed() + std::max(end_seconds, 0.0);
  const int planned =
      std::min(first_epoch + epochs_within_budget(seconds_, projected, done), std::max(kMostEpochs, epoch + 1));
  if (planned != epochs) {
    // The first plan is news; later ones follow the pace epoch by epoch (a first epoch slowed by
    // cuDNN's search makes every later one add an epoch), so they are told at debug level.
    std::ostringstream line;
    line << "time: " << text() << " budget, " << format_fixed(projected / std::max(done, 1), 1)
         << " s an epoch so far: training " << planned << " epochs instead of " << epochs
         << " (the learning-rate schedule ends with them)";
    if (planned_before_) {
      YF_LOG_DEBUG(line.str());
    } else {
      YF_LOG_INFO(line.str());
    }
    planned_before_ = true;
  }
  return planned;
}

std::string TimeBudget::text() const {
  // Enough digits for a budget of seconds given in hours.
  return format_fixed(seconds_ / 3600.0, seconds_ < 36.0 ? 5 : 3) + " h (" + format_fixed(seconds_, seconds_ < 10.0 ? 1 : 0) + " s)";
}

std::string TimeBudget::stop_reason() const {
  // The plan may end the run a little before the budget: another epoch would overrun it.
  const double t = elapsed();
  return "time: the " + text() + (t > seconds_ ? " budget is spent" : " budget has no room for another epoch") + " (" +
         format_fixed(t, 1) + " s of training)";
}

}  // namespace yoloflow::core
