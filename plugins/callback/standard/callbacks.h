#pragma once
// The callbacks of this library and their schemas (registered in plugin.cpp).
#include "yoloflow/callback.h"

namespace yoloflow::callbacks {

// Stops the run once `patience` epochs passed without a strictly better fitness (Ultralytics'
// rules: while the best fitness is exactly 0 every epoch counts as an improvement; an epoch
// validated after val_every epochs counts that many; the last epoch ends the run anyway).
class EarlyStopping final : public Callback {
 public:
  static Schema schema();
  void configure(const Params& params, const StageContext& context) override;
  void on_epoch_end(const EpochSummary& epoch, const TrainProgress& progress, TrainControl& control) override;
  json state() const override;
  void load_state(const json& state) override;

 private:
  std::int64_t patience_ = 100;
  double best_fitness_ = -1.0;  // -1 until a validation
  int epochs_without_improvement_ = 0;
};

// epochN.pt every `save_period` epochs; last.pt rewritten mid-epoch every `save_every` batches
// (at the first optimizer step after them), so a killed run loses little.
class PeriodicCheckpoints final : public Callback {
 public:
  static Schema schema();
  void configure(const Params& params, const StageContext& context) override;
  void on_batch_end(const TrainProgress& progress, TrainControl& control) override;
  void on_epoch_end(const EpochSummary& epoch, const TrainProgress& progress, TrainControl& control) override;
  json state() const override;
  void load_state(const json& state) override;

 private:
  std::int64_t save_period_ = 0, save_every_ = 0;
  std::int64_t batches_since_save_ = 0;  // since last.pt was last written
};

}  // namespace yoloflow::callbacks
