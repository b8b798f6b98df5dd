#pragma once
// Where a training run stands, and exactly what a checkpoint carries so that a stopped run
// continues there (train_checkpoints.h writes and reads it): the position in the run, the
// epoch's running totals, the gradient accumulation in progress, the best fitness (best.pt).
// The callbacks' state travels beside it (train_callbacks.h).
#include <cstdint>
#include <string>
#include <vector>

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
  std::int64_t batch = 0;            // images per batch (0 until the first batch)
  std::int64_t micro_batch = 0;      // images per forward + backward; 0 = the whole batch
  double total_seconds = 0.0;        // training time of the finished epochs
  double best_fitness = -1.0;        // -1 until a validation
  torch::Tensor loss_sum;            // (K) the loss's components summed over `epoch`'s batches, on the train device
  std::vector<std::string> loss_names;  // the K components' names (Loss::item_names: box, cls, dfl)
};

}  // namespace yoloflow::core
