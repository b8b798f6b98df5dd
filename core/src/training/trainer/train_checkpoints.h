#pragma once
// A training run in a checkpoint and back: the tensors of the model, its EMA, the optimizer
// and the loss scaler, the callbacks' state, and the TrainState (step/train_state.h), so that
// `yoloflow train --resume` continues exactly where the run stopped, mid-epoch and
// mid-accumulation included. Saving is one function and restoring is one function.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "training/callbacks/train_callbacks.h"
#include "training/checkpoint/checkpoint.h"
#include "training/step/train_state.h"
#include "yoloflow/model.h"
#include "yoloflow/optimizer.h"
#include "yoloflow/precision.h"

namespace yoloflow::core {

// What a checkpoint is made of, and what a resume restores into. The optimizer exists before
// the first batch, so a resume restores every part at once.
struct TrainingParts {
  Model& model;
  Optimizer& optimizer;
  PrecisionStrategy& precision;
  TrainCallbacks& callbacks;
  const std::vector<std::int64_t>& frozen_layers;  // the `freeze` layers (not trained)
};

// At an epoch's end (`mid_epoch` false) the checkpoint continues with the next epoch at its
// first sample; mid-epoch it holds the epoch's running totals and any gradients accumulated
// for the next optimizer step. `meta` is the caller's description (model, names, pipeline...)
// that the state's own record is added to.
Checkpoint make_train_checkpoint(const TrainState& state, const TrainingParts& parts, bool mid_epoch,
                                 double epoch_seconds, nlohmann::json meta);

// Where a resumed run starts, read before anything is built (the graph is configured for that
// epoch): the epoch, the position in its sample order, and the epochs a time budget had planned.
struct ResumePoint {
  int epoch = 0;
  std::uint64_t next_sequence = 0;
  int planned_epochs = 0;  // the checkpoint's `epochs` (0: not recorded)
};
ResumePoint resume_point(const Checkpoint& ck);

// A resumed run, restored in one place: refuses (InvalidInput naming `path` and `freeze_where`)
// a checkpoint of another architecture, class count or set of frozen layers; then restores the
// model's weights and buffers, the loss scaler, the optimizer's state and the gradients
// accumulated before the stop, the callbacks' state and tensors, and the run's counters, the
// epoch's position and running totals into `state` (its loss sum on `device`). Returns the
// seconds the stopped epoch had run (0 when the checkpoint ended an epoch). Logs where the run
// continues.
double restore_train_checkpoint(const Checkpoint& ck, const std::string& path, const std::string& freeze_where,
                                const TrainingParts& parts, const torch::Device& device, TrainState& state);

// The run's checkpoint files named `files` ("last.pt", "best.pt"...): RUN_DIR/weights/NAME, each once.
std::vector<std::string> weight_paths(const std::string& run_dir, const std::vector<std::string>& files);

}  // namespace yoloflow::core
