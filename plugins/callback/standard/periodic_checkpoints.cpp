#include <string>

#include "callbacks.h"

namespace yoloflow::callbacks {

Schema PeriodicCheckpoints::schema() {
  Schema s;
  s.add_int("save_period", 0).min(0).fixed().doc("Also keep weights/epochN.pt every N epochs (0 = off).");
  s.add_int("save_every", 0).min(0).fixed().doc(
      "Also rewrite last.pt (resumable, mid-epoch) at the first optimizer step after every N batches "
      "(0 = only at epoch ends).");
  return s;
}

void PeriodicCheckpoints::configure(const Params& params, const StageContext&) {
  save_period_ = params.get_int("save_period");
  save_every_ = params.get_int("save_every");
}

void PeriodicCheckpoints::on_batch_end(const TrainProgress& progress, TrainControl& control) {
  ++batches_since_save_;
  // Only right after an optimizer step: a checkpoint then holds no pending gradients.
  if (save_every_ > 0 && progress.optimizer_stepped && batches_since_save_ >= save_every_) {
    batches_since_save_ = 0;  // before the save, so that the checkpoint holds the new count
    control.save_checkpoint("last.pt");
  }
}

void PeriodicCheckpoints::on_epoch_end(const EpochSummary&, const TrainProgress& progress, TrainControl& control) {
  batches_since_save_ = 0;  // every epoch end writes last.pt
  if (save_period_ > 0 && (progress.epoch + 1) % save_period_ == 0) {
    control.save_checkpoint("epoch" + std::to_string(progress.epoch + 1) + ".pt");
  }
}

json PeriodicCheckpoints::state() const { return {{"batches_since_save", batches_since_save_}}; }

void PeriodicCheckpoints::load_state(const json& state) {
  if (state.is_object()) batches_since_save_ = state.value("batches_since_save", std::int64_t{0});
}

}  // namespace yoloflow::callbacks
