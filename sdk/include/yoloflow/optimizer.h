#pragma once
// Optimizer plugins (LibTorch). Our own interface rather than torch::optim so that updates
// can be multi-tensor (foreach) and so that a step can be skipped by a device-side flag
// (fp16 overflow) without a host synchronisation.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

// The tensor type alone, not all of <torch/torch.h>: a plugin that only needs Tensor's methods
// compiles in a quarter of the time. at::Tensor is the type at::Tensor names.
#include <ATen/core/Tensor.h>

#include "yoloflow/component.h"

namespace yoloflow {

// The host builds three groups, as Ultralytics does: "weights" (convolution and linear
// weights), "norm" (norm-layer weights) and "bias", in that order (results.csv's lr/pg0..2).
// It hands them to setup() with `name` and `params` filled and every number 0; setup() sets,
// on every group, `lr` and `initial_lr` (the optimizer's lr0), `momentum` (SGD's momentum or
// Adam's beta1) and `weight_decay` (the decay meant for the nominal batch). After setup() the
// host scales the weights group's decay to the images per optimizer step, sets the norm and
// bias groups' decay to 0, and refuses a group whose initial_lr is still 0. Before each step
// the host writes `lr` (warmup, then initial_lr times the schedule) and, where warmup_traits()
// says so, `momentum`; step() reads them.
struct ParamGroup {
  std::string name;
  std::vector<at::Tensor> params;
  double lr = 0.0;
  double initial_lr = 0.0;   // the lr the schedule scales (lr0)
  double momentum = 0.0;     // SGD momentum, or Adam beta1
  double weight_decay = 0.0;
};

struct OptimizerSetup {
  std::int64_t total_iterations = 0;  // optimizer steps planned for the whole run
  int nc = 80;
  std::int64_t nominal_batch = 64;
};

// What the host's warmup (the first max(warmup_epochs, 100 iterations)) does to the groups:
// `bias_lr`: the bias group's lr starts at the train sink's warmup_bias_lr instead of 0 (too
// high for Adam-type updates: Ultralytics' `auto` turns it off); `momentum`: every group's
// momentum ramps from warmup_momentum to its value (an SGD momentum; Adam's beta1 is left
// alone, as in Ultralytics).
struct WarmupTraits {
  bool bias_lr = true;
  bool momentum = true;
};

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

class Optimizer : public Component {
 public:
  ~Optimizer() override = default;
  // Called once, after configure(): see ParamGroup for what the groups hold and what setup()
  // must set.
  virtual void setup(std::vector<ParamGroup> groups, const OptimizerSetup& setup) = 0;
  virtual std::vector<ParamGroup>& groups() = 0;
  // One update from the parameters' .grad(). `skip`, when defined, is a 0-dim tensor on the
  // parameters' device; nonzero means leave parameters and state unchanged.
  virtual void step(const at::Tensor& skip) = 0;
  // "SGD(lr=0.01, momentum=0.937, nesterov=True)": what actually runs.
  virtual std::string description() const = 0;
  virtual NamedTensors state() const = 0;
  virtual void load_state(const std::map<std::string, at::Tensor>& state) = 0;
  // Which warmup rules apply to this optimizer (after setup()); by default both, as for SGD.
  virtual WarmupTraits warmup_traits() const { return {}; }
};

}  // namespace yoloflow
