#pragma once
// The training micro-step (forward, loss, backward, loss accumulation) replayed as CUDA
// graphs: one launch per step instead of ~2,000 kernel launches from the host. The eager
// yolo11n step at batch 32 is host-bound (REFERENCE.md: Ultralytics 86 ms for a few ms of GPU
// work; ours 60 ms); a replayed graph costs the host microseconds.
//
// One graph per input shape (batch, height, width, every target's shape) and per `key` the caller adds
// for values baked into the captured kernels (loss gains). Inputs are copied into the graph's
// static device tensors from pinned staging memory, asynchronously. Every tensor the step
// writes that must outlive it (parameters, gradients, BN statistics, the loss accumulator)
// must exist before capture and keep its storage afterwards: the caller zeroes gradients in
// place instead of dropping them. All graphs share one memory pool: nothing one graph leaves
// behind is read by another, and replays never overlap (one stream).
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "yoloflow/loss.h"

namespace yoloflow::core {

class CapturedStep {
 public:
  // pixels: device uint8 (B, H, W, 3); targets: the loss's, on the device (yoloflow/loss.h).
  using Body = std::function<void(const torch::Tensor& pixels, const LossTargets& targets)>;

  // Empty when graphs can run on `device` in this build, else why not.
  static std::string unavailable_reason(const torch::Device& device);

  // Whether a batch of `images` (B, H, W, 3) without a graph of its own runs eagerly beside the
  // graph captured for `graph` images, keeping it: the same height and width, no more images (an
  // epoch's last, smaller batch). Any other shape starts the graphs over once they are used up.
  static bool fits_graph(c10::IntArrayRef images, const std::vector<std::int64_t>& graph);

  // `eager_runs`: batches of each new shape run eagerly before its capture (cuDNN benchmark
  // and lazily built state settle first; they are real training steps). At most `max_graphs`
  // shapes are captured; batches of any other shape run eagerly.
  CapturedStep(torch::Device device, int eager_runs, std::size_t max_graphs);
  ~CapturedStep();
  CapturedStep(const CapturedStep&) = delete;
  CapturedStep& operator=(const CapturedStep&) = delete;

  // Trains on one batch (host tensors: uint8 (B, H, W, 3), the loss's targets). Runs `body` on
  // the static device inputs eagerly, or captures it then replays, or replays. Once a graph
  // exists, eager batches (a shape with no graph of its own) allocate from its pool as
  // run_between_replays does, with the same check. `prepare` runs
  // just before a capture (e.g. allocate gradients that do not exist yet). When a capture
  // fails the batch still runs eagerly, `failed()` turns true and `failure()` says why.
  // `pixels_owner` owns the memory `pixels` views: when that is pinned host memory, the copy
  // reads it in place, and the owner is held until the copy has run on the GPU (the batcher
  // reuses the block as soon as it is let go). Otherwise the pixels are staged through a
  // pinned copy first.
  void run(const torch::Tensor& pixels, const LossTargets& targets, const std::string& key, const Body& body,
           const std::function<void()>& prepare, std::shared_ptr<const void> pixels_owner = nullptr);

  // Runs `work` (validation between two training steps) with its device memory served from
  // the graphs' pool, on the stream they were captured on (a pool's free blocks serve only the
  // stream that made them): the captured step's activations are dead between replays, so work
  // whose tensors all die before it returns uses that memory instead of adding its own beside
  // it. Without a pool (eager training, a CPU build) it just runs `work`.
  // A tensor `work` left allocated would be overwritten by the next replay. That is checked
  // (the allocator's allocated bytes before and after); when something stayed, the graphs are
  // dropped (recaptured at the next batches in a new pool, which nothing else holds) and from
  // then on work runs beside the pool, with a warning. `share` false: always beside it.
  void run_between_replays(const std::function<void()>& work);
  void share_pool(bool share) { share_pool_ = share; }

  bool failed() const { return !failure_.empty(); }
  const std::string& failure() const { return failure_; }
  std::size_t graphs() const;    // captured so far
  std::size_t replays() const { return replays_; }
  std::size_t eager_steps() const { return eager_steps_; }  // including each shape's warm-up

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string failure_;
  std::size_t replays_ = 0, eager_steps_ = 0;
  bool share_pool_ = true;
};

}  // namespace yoloflow::core
