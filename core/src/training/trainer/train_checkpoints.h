#pragma once
// A training run in a checkpoint and back: the tensors of the model, its EMA, the optimizer
// and the loss scaler, plus the TrainState (train_state.h), so that `yoloflow train --resume`
// continues exactly where the run stopped, mid-epoch and mid-accumulation included.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "training/checkpoint/checkpoint.h"
#include "training/trainer/train_callbacks.h"
#include "training/trainer/train_state.h"
#include "yoloflow/model.h"
#include "yoloflow/optimizer.h"
#include "yoloflow/precision.h"

namespace yoloflow::core {

// What a checkpoint is made of; `optimizer` may be null (before the first batch).
struct TrainingParts {
  Model& model;
  Optimizer* optimizer;
  PrecisionStrategy& precision;
};

// At an epoch's end (`mid_epoch` false) the checkpoint continues with the next epoch at its
// first sample; mid-epoch it holds the epoch's running totals and any gradients accumulated
// for the next optimizer step. `meta` is the caller's description (model, names, pipeline...)
// that the state's own entries are added to; `callbacks` the callbacks' tensors (their deploy
// weights become the `ema` entry).
Checkpoint make_train_checkpoint(const TrainState& state, const TrainingParts& parts, bool mid_epoch,
                                 double epoch_seconds, nlohmann::json meta, TrainCallbacks::SavedTensors callbacks);

// The callbacks' tensors as a checkpoint holds them (to hand back with load_tensors).
TrainCallbacks::SavedTensors callback_tensors(const Checkpoint& ck);

// A resumed run: the model's weights and buffers and the loss scaler from `ck` (read from
// `path`), and the run's counters into `state` (the optimizer, built at the first batch, loads
// its part later: restore_optimizer). Throws InvalidInput naming `path` when the checkpoint
// holds another architecture or class count. Logs where the run continues.
void restore_train_checkpoint(const Checkpoint& ck, const std::string& path, const TrainingParts& parts,
                              TrainState& state);

// The optimizer's state and the gradients accumulated before the stop, so the pending step
// sees them all.
void restore_optimizer(const Checkpoint& ck, torch::nn::Module& module, Optimizer& optimizer, const torch::Device& device,
                       TrainState& state);

// The position and running totals of the epoch a checkpoint stopped in; returns the seconds
// that epoch had already run.
double resume_epoch(const Checkpoint& ck, TrainState& state);

// The run's checkpoint files named `files` ("last.pt", "best.pt"...): RUN_DIR/weights/NAME, each once.
std::vector<std::string> weight_paths(const std::string& run_dir, const std::vector<std::string>& files);

}  // namespace yoloflow::core
