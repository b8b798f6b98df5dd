#pragma once
// The optimizer over a run, as the recipe drives it: its parameter groups set up at the first
// batch (param_groups.h), then before every batch each group's lr (the warmup ramp, then
// initial_lr times the scheduler plugin's factor for the epoch), momentum where the optimizer's
// warmup traits say so, and the gradient accumulation that reaches the nominal batch.
#include <cstdint>
#include <memory>
#include <string>

#include <torch/torch.h>

#include "training/trainer/warmup.h"
#include "yoloflow/optimizer.h"
#include "yoloflow/scheduler.h"

namespace yoloflow::core {

class OptimizerSchedule {
 public:
  // `scheduler` must outlive this; `world`: data-parallel ranks (each step sees batch x world images).
  OptimizerSchedule(const Scheduler& scheduler, WarmupOptions warmup, std::int64_t nominal_batch, std::int64_t world,
                    int epochs);

  // Batch-dependent settings: accumulation to the nominal batch, batches per epoch, and once an
  // optimizer is attached its weight decay and the warmup length (in batches).
  void set_batch(std::int64_t batch, std::int64_t images_per_epoch);
  // Sets `optimizer` up on `module`'s recipe groups (after set_batch). Throws InvalidInput at
  // `where` when the optimizer leaves a group without a learning rate.
  void attach(Optimizer& optimizer, torch::nn::Module& module, int nc, const std::string& where);
  bool attached() const { return optimizer_ != nullptr; }

  // Writes lr and momentum of every group, and the accumulation, for the batch at `iteration`
  // (counted over the run) of `epoch`.
  void apply(int epoch, std::int64_t iteration);
  // The run's epoch count changed (a time budget planned it again): the scheduler's factor
  // follows the new count from the next batch, so the schedule ends with the run.
  void set_epochs(int epochs) { epochs_ = epochs; }

  std::int64_t accumulate() const { return accumulate_; }                // this batch's
  std::int64_t target_accumulate() const { return target_accumulate_; }  // after warmup
  std::int64_t batches_per_epoch() const { return batches_per_epoch_; }
  std::int64_t images_per_epoch() const { return images_per_epoch_; }

 private:
  const Scheduler& scheduler_;
  WarmupOptions warmup_options_;
  std::unique_ptr<Warmup> warmup_;
  std::int64_t nominal_batch_, world_;
  int epochs_;
  Optimizer* optimizer_ = nullptr;
  std::int64_t batch_ = 0, images_per_epoch_ = 0;
  std::int64_t accumulate_ = 1, target_accumulate_ = 1, batches_per_epoch_ = 1;
  double accumulate_ratio_ = 1.0;  // nominal batch / (batch x ranks), before rounding
  double base_weight_decay_ = 0.0, base_momentum_ = 0.937;
  bool warmup_momentum_ = true;  // the optimizer's WarmupTraits::momentum
};

}  // namespace yoloflow::core
