#pragma once
// Optimizer plugins (LibTorch). Our own interface rather than torch::optim so that updates
// can be multi-tensor (foreach) and so that a step can be skipped by a device-side flag
// (fp16 overflow) without a host synchronisation.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "yoloflow/component.h"

namespace yoloflow {

// The host builds three groups, as Ultralytics does: "weights" (with decay), "norm"
// (norm-layer weights, no decay) and "bias" (no decay). Learning rate and momentum are
// set by the host before each step (warmup, schedules); the optimizer reads them.
struct ParamGroup {
  std::string name;
  std::vector<torch::Tensor> params;
  double lr = 0.0;
  double initial_lr = 0.0;   // lr0 as resolved by the optimizer (auto may change it)
  double momentum = 0.0;     // SGD momentum, or Adam beta1
  double weight_decay = 0.0;
};

struct OptimizerSetup {
  std::int64_t total_iterations = 0;  // optimizer steps planned for the whole run
  int nc = 80;
  std::int64_t nominal_batch = 64;
};

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

class Optimizer : public Component {
 public:
  ~Optimizer() override = default;
  // Called once, after configure(). Group lr, momentum and weight decay are preset from the
  // optimizer's own parameters; the optimizer may override them (the "auto" rule does).
  virtual void setup(std::vector<ParamGroup> groups, const OptimizerSetup& setup) = 0;
  virtual std::vector<ParamGroup>& groups() = 0;
  // One update from the parameters' .grad(). `skip`, when defined, is a 0-dim tensor on the
  // parameters' device; nonzero means leave parameters and state unchanged.
  virtual void step(const torch::Tensor& skip) = 0;
  // "SGD(lr=0.01, momentum=0.937, nesterov=True)": what actually runs.
  virtual std::string description() const = 0;
  virtual NamedTensors state() const = 0;
  virtual void load_state(const std::map<std::string, torch::Tensor>& state) = 0;
};

}  // namespace yoloflow
