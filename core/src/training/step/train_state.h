#pragma once
// Where a training run stands, and exactly what a checkpoint carries so that a stopped run
// continues there (trainer/train_checkpoints.h writes and restores it): the position in the run,
// the epoch's running totals, the gradient accumulation in progress, the best fitness (best.pt).
// The callbacks' state travels beside it (callbacks/train_callbacks.h).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

namespace yoloflow::core {

struct TrainState {
  int epoch = 0;                     // 0-based, the epoch in progress
  std::int64_t step = 0;             // batches of `epoch` trained
  std::uint64_t next_sequence = 0;   // position in `epoch`'s sample order to continue from
  std::int64_t global_step = 0;      // optimizer steps so far
  std::int64_t micro = 0;            // batches whose gradients wait for the next optimizer step
  std::int64_t images = 0;           // images of `epoch` trained
  std::int64_t oom_retries = 0;      // out-of-memory retries in `epoch`
  std::int64_t batch = 0;            // images per batch (0 until the optimizer is set up)
  std::int64_t micro_batch = 0;      // images per forward + backward; 0 = the whole batch
  double total_seconds = 0.0;        // training time of the finished epochs
  double best_fitness = -1.0;        // -1 until a validation
  torch::Tensor loss_sum;            // (K) the loss's components summed over `epoch`'s batches, on the train device
  std::vector<std::string> loss_names;  // the K components' names (Loss::item_names: box, cls, dfl)
};

// The loop's state that no tensor and no position field of the checkpoint carries, as one
// typed record: the checkpoint's meta "train_state" entry.
struct SavedTrainState {
  std::int64_t micro = 0;            // TrainState::micro (mid-epoch; 0 at an epoch's end)
  std::int64_t images = 0;           // TrainState::images (mid-epoch)
  std::int64_t oom_retries = 0;      // TrainState::oom_retries (mid-epoch)
  std::int64_t batch = 0;            // TrainState::batch
  std::int64_t micro_batch = 0;      // TrainState::micro_batch (an out-of-memory error may have lowered it)
  double total_seconds = 0.0;        // TrainState::total_seconds
  double epoch_seconds = 0.0;        // the stopped epoch's training time so far (mid-epoch)
  std::vector<double> loss_sum;      // TrainState::loss_sum (mid-epoch; empty at an epoch's end)
  std::vector<std::int64_t> frozen_layers;  // the `freeze` layers the optimizer's state belongs to
};

// The record of `state` (mid-epoch: with the epoch's running totals), for the meta entry.
SavedTrainState saved_train_state(const TrainState& state, bool mid_epoch, double epoch_seconds,
                                  std::vector<std::int64_t> frozen_layers);
nlohmann::json to_json(const SavedTrainState& saved);
// A checkpoint's record, from its meta. Checkpoints written before the record existed kept
// the same values as separate meta keys: they are read the same way.
SavedTrainState read_saved_train_state(const nlohmann::json& meta);

}  // namespace yoloflow::core
