#pragma once
// One batch of the training recipe, however it has to run: forward and backward in
// micro-batches (the whole batch's loss normaliser exactly, micro_batches.h), retried in
// halved micro-batches after an out-of-memory error (oom_guard.h), or replayed as a captured
// CUDA graph (captured_step.h); gradients accumulate to the nominal batch, then the optimizer
// step: unscale, clip the global norm, step, scaler update, then the trainer's hooks (EMA).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "training/step/captured_step.h"
#include "training/step/step_profile.h"
#include "training/step/train_state.h"
#include "yoloflow/loss.h"
#include "yoloflow/model.h"
#include "yoloflow/optimizer.h"
#include "yoloflow/precision.h"

namespace yoloflow::core {
namespace dist {
class DataParallel;
}

// Why the training step cannot be captured as a CUDA graph here (empty: it can): not on this
// device or build, not with data parallel (its gradient hooks run per step), not while
// profiling (that times phases inside the step).
std::string capture_unavailable_reason(const torch::Device& device, bool data_parallel, bool profiling);

// The train sink's `cuda_graph` setting (true, false or "auto") asks for a capture on `device`:
// true, or "auto" on CUDA.
bool capture_requested(const nlohmann::json& setting, const torch::Device& device);

class StepEngine {
 public:
  // Everything must outlive the engine; `dp` and `profile` may be null. `after_step` runs
  // after every optimizer step (the trainer's on_optimizer_step hooks: an average of the
  // weights); may be empty.
  StepEngine(Model& model, Loss& loss, PrecisionStrategy& precision, dist::DataParallel* dp, StepProfile* profile,
             torch::Device device, double clip_grad, std::function<void()> after_step);
  ~StepEngine();

  void set_optimizer(Optimizer& optimizer) { optimizer_ = &optimizer; }
  // Another strategy from the next batch on (precision_schedule); it must outlive the engine's
  // use of it. Graphs are per `key`: the caller's key names the strategy.
  void set_precision(PrecisionStrategy& precision) { precision_ = &precision; }
  // Batches then run as a captured graph where they can (no micro-batches, no multi-scale).
  void enable_capture(std::unique_ptr<CapturedStep> captured) { captured_ = std::move(captured); }
  // The train sink's cuda_graph: captures where this device and run allow it, otherwise says
  // why not: a warning when it was asked for, an info line when it was "auto".
  void enable_capture_if_possible(bool profiling, int warmup_steps, bool automatic);
  const CapturedStep* captured() const { return captured_.get(); }
  // Runs `work` (validation) where it can use the captured step's memory between replays
  // (CapturedStep::run_between_replays; `share` false, or no capture: it just runs).
  void between_steps(const std::function<void()>& work);
  void share_graph_pool(bool share) {
    if (captured_) captured_->share_pool(share);
  }
  // The capture's counts so far, logged at an epoch's end (nothing without a capture).
  void log_capture_counts() const;

  // Trains on one batch: `pixels` (B, H, W, 3) uint8 on the host, viewing memory `owner`
  // keeps alive; `targets` the loss's padded targets on the host (batch_targets.h). `size`: this batch's multi-scale
  // image size (0 = as collated). `key` names values a captured graph bakes in (the loss's parameters).
  // Adds the batch's mean losses into state.loss_sum; steps the optimizer once `accumulate`
  // batches have contributed.
  void train(TrainState& state, const torch::Tensor& pixels, const LossTargets& targets,
             std::shared_ptr<std::uint8_t> owner, int size, std::int64_t accumulate, const std::string& key);
  // Applies the accumulated gradients now (the end of an epoch, or a rank's missing batches).
  void optimizer_step(TrainState& state);
  // The step's forward and backward of one batch, whole, without an optimizer step: what auto
  // batch measures the memory of. `targets` on the device; the gradients stay in the model.
  void forward_backward_only(const torch::Tensor& pixels, const LossTargets& targets);

 private:
  torch::Tensor forward_backward(TrainState& state, const torch::Tensor& pixels, const LossTargets& targets, int size,
                                 std::int64_t accumulate);
  void recover_from_out_of_memory(TrainState& state, const std::exception& e, std::int64_t batch);
  torch::Tensor resize_for_multi_scale(const torch::Tensor& images, int size) const;
  void allocate_missing_grads();

  Model& model_;
  Loss& loss_;
  PrecisionStrategy* precision_;
  dist::DataParallel* dp_;
  StepProfile* profile_;
  torch::Device device_;
  double clip_grad_;
  std::function<void()> after_step_;
  Optimizer* optimizer_ = nullptr;
  std::unique_ptr<CapturedStep> captured_;
  bool failure_reported_ = false, multi_scale_reported_ = false;
};

}  // namespace yoloflow::core
