#pragma once
// Sums the gradients of a model over the ranks of a process group, bucketed and overlapped
// with the backward pass: a post-hook on each parameter's gradient accumulator marks its
// gradient final, and a bucket (a few MiB of parameters, in reverse registration order, the
// order backward produces them) is flattened and its all-reduce started as soon as it and
// every bucket before it are complete. Buckets start in the same order on every rank, so the
// ranks' collectives always match. Only the backward that ends an accumulation window
// reduces (expect_sync); synchronize() waits for the buckets and writes the sums back into
// the .grad tensors, reducing at once whatever the backward did not (a partial window).
//
// The sum, not the mean: the detection loss is scaled by the per-rank batch size, so the sum
// over ranks is the gradient of the loss of the global batch, the scale lr, weight decay and
// clipping are tuned for (what one process with the whole batch computes; Ultralytics gets
// the same by multiplying the loss by the world size before DDP's mean).
#include <cstdint>
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "training/parallel/process_group.h"

namespace yoloflow::core::dist {

class GradientReducer {
 public:
  // `params`: the trainable parameters, in registration order (every rank the same).
  // bucket_bytes 0 = $YOLOFLOW_DIST_BUCKET_MB or 8 MiB.
  GradientReducer(ProcessGroup& group, std::vector<torch::Tensor> params, std::int64_t bucket_bytes = 0);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // Before each backward: whether its gradients end the accumulation window (then the
  // buckets are reduced while the backward still runs).
  void expect_sync(bool sync);
  // Before the optimizer uses the gradients: every parameter's .grad becomes the sum over
  // ranks (undefined gradients count as zeros and become defined). Throws yoloflow::Error
  // when a collective fails.
  void synchronize();

  std::size_t bucket_count() const;
  // Buckets whose all-reduce a backward started, since construction (for tests and logs).
  std::size_t buckets_started_in_backward() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace yoloflow::core::dist
