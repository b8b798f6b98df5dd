#include <algorithm>
#include <string>

#include "callbacks.h"

namespace yoloflow::callbacks {

Schema EarlyStopping::schema() {
  Schema s;
  s.add_int("patience", 100).min(0).fixed().doc("Stop after this many epochs without fitness improvement (0 = never).");
  return s;
}

void EarlyStopping::configure(const Params& params, const StageContext&) { patience_ = params.get_int("patience"); }

void EarlyStopping::on_epoch_end(const EpochSummary& epoch, const TrainProgress&, TrainControl& control) {
  if (!epoch.validated) return;
  const bool improved = epoch.fitness > best_fitness_ || best_fitness_ == 0.0;
  best_fitness_ = std::max(best_fitness_, epoch.fitness);
  epochs_without_improvement_ = improved ? 0 : epochs_without_improvement_ + std::max(epoch.epochs_per_validation, 1);
  if (patience_ > 0 && epochs_without_improvement_ >= patience_ && !epoch.last) {
    control.request_stop("early stop: no fitness improvement in the last " + std::to_string(epochs_without_improvement_) +
                         " epochs (patience " + std::to_string(patience_) + ")");
  }
}

json EarlyStopping::state() const {
  return {{"best_fitness", best_fitness_}, {"epochs_without_improvement", epochs_without_improvement_}};
}

void EarlyStopping::load_state(const json& state) {
  if (!state.is_object()) return;
  best_fitness_ = state.value("best_fitness", -1.0);
  epochs_without_improvement_ = state.value("epochs_without_improvement", 0);
}

}  // namespace yoloflow::callbacks
