#pragma once
// The trainer: the one owner of a training run's loop, as mmengine's EpochBasedTrainLoop or
// Lightning's fit loop. A pipeline whose last stage is `train` runs under it:
//
//   callbacks' on_train_start
//   for each epoch (from where a resumed checkpoint stopped):
//     the graph runner's epoch, each batch a training step here (on this thread):
//       on_batch_start, the step (accumulation to the nominal batch, the optimizer step,
//       on_optimizer_step), on_batch_end
//     the epoch's last partial accumulation; validation between on_validation_start/_end
//     (the callbacks put the weights to score in the model: the ema callback's average);
//     on_epoch_end; the checkpoint (with the callbacks' state and tensors); results.csv once
//     the checkpoint is on disk; the monitors' epoch event
//   on_train_end
//
// A stop (a signal, max_steps, a callback) ends the epoch after the batch in hand and saves
// last.pt to resume from. A time budget (`time`, time_budget.h) plans the epochs again after
// each one and cuts the epoch in which it is spent, which is then validated and saved as the
// run's last. The checkpoint of a resumed run is read once, here. Everything the
// run is made of comes from one builder (training_parts.h), which auto batch uses too.
#include "runtime/plugin/registry.h"

namespace yoloflow::core {

// Registers the `train` stage: its schema, its checks and the trainer as its driver (called by
// register_builtin_components).
void register_trainer(Registry& registry);

}  // namespace yoloflow::core
