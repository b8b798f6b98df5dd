#pragma once
// What a callback may see of the training itself (LibTorch): the hook points of callback.h that
// hand over tensors. Include it only in a callback that works on tensors (an average of the
// weights, a weight statistic); the other hooks need no LibTorch.
//
// What a hook may do with it, and why no more:
// - model(): read every parameter and buffer; write them in place (copy_, under no-grad)
//   between steps, as an average of the weights swaps itself in for validation and back. Never
//   replace a tensor or change its shape, dtype or device: a captured CUDA graph, the optimizer
//   and data-parallel gradient hooks hold those very tensors.
// - param_groups(): the optimizer's groups as the last step used them (lr, momentum, weight
//   decay), read-only. Stepping the optimizer or changing its state is the trainer's alone:
//   the recipe's warmup, schedule and gradient accumulation decide them.
// - progress(): where the run stands.
// A view is valid only during the call it is passed to.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <torch/nn/module.h>

#include "yoloflow/callback.h"
#include "yoloflow/optimizer.h"

namespace yoloflow {

class TrainingView {
 public:
  virtual torch::nn::Module& model() = 0;
  virtual const std::vector<ParamGroup>& param_groups() const = 0;
  virtual TrainProgress progress() const = 0;

 protected:
  ~TrainingView() = default;
};

// The tensors a callback keeps in a run's checkpoints, beside its JSON state(). Its own
// tensors go under its name; the weights it wants deployed (an average of the weights) become
// the checkpoint's `ema` entry, which validation during training scores and `yoloflow val`,
// `predict` and `export` load. Valid only during the call it is passed to.
class CheckpointTensors {
 public:
  // Saving: this callback's named tensors (CPU or device; the host copies them out).
  virtual void put(NamedTensors tensors) = 0;
  // Saving: the weights to deploy, under the model's state-dict names (every parameter and
  // buffer of the model), and how many optimizer steps they average (0: not an average). At
  // most one callback of a run may give them.
  virtual void put_deploy_weights(NamedTensors tensors, std::int64_t averaged_steps) = 0;
  // Loading: what put() stored for this callback; empty when the checkpoint holds none.
  virtual const NamedTensors& get() const = 0;
  // Loading: the checkpoint's deploy weights (its `ema` entry; empty when it has none) and the
  // steps they average.
  virtual const NamedTensors& deploy_weights() const = 0;
  virtual std::int64_t deploy_averaged_steps() const = 0;

 protected:
  ~CheckpointTensors() = default;
};

}  // namespace yoloflow
