#pragma once
// What the standard optimizers share: parameters, the host's groups, per-parameter state slots
// and per-group scalars saved by name, and the skip flag turned into a device-side "keep" factor.
#include <map>
#include <string>
#include <vector>

#include "yoloflow/optimizer.h"

namespace yoloflow::optim {

struct OptimizerParams {
  double lr0 = 0.01;
  double momentum = 0.937;
  double weight_decay = 5e-4;
  bool nesterov = true;
};

// Per group: named state slots, one tensor per parameter, plus a step counter and any other
// scalars of the update kept on the device (a skipped step must not count, and the host may
// not read the flag).
struct GroupState {
  std::map<std::string, std::vector<torch::Tensor>> slots;
  torch::Tensor step;                            // 0-dim float
  std::map<std::string, torch::Tensor> scalars;  // 0-dim float each (NAdam's mu_product)
};

class GroupedOptimizer : public Optimizer {
 public:
  void configure(const Params& params, const StageContext& context) override;
  // Sets lr, initial_lr, momentum and weight_decay of every group from the parameters (the
  // host then scales decay by batch size and keeps it on the "weights" group only). Creates
  // the state slots, zero-filled.
  void setup(std::vector<ParamGroup> groups, const OptimizerSetup& setup) override;
  std::vector<ParamGroup>& groups() override { return groups_; }
  void step(const torch::Tensor& skip) override;
  NamedTensors state() const override;  // "<group>.<index>.<slot>", "<group>.step", "<group>.<scalar>"
  void load_state(const std::map<std::string, torch::Tensor>& state) override;

  OptimizerParams& options() { return opt_; }

 protected:
  virtual std::vector<std::string> slot_names() const = 0;
  // Per-group scalars beside the step, with their initial values; none by default.
  virtual std::map<std::string, double> scalar_names() const { return {}; }
  // One update of a group. `keep` is undefined (always step) or a 0-dim float tensor on the
  // device, 1 to step and 0 to leave everything unchanged; `grads` are finite where keep is 1
  // and zero where it is 0.
  virtual void update(ParamGroup& group, GroupState& state, const std::vector<torch::Tensor>& params,
                      const std::vector<torch::Tensor>& grads,
                      std::map<std::string, std::vector<torch::Tensor>>& slots,
                      const torch::Tensor& keep) = 0;

  OptimizerParams opt_;
  std::vector<ParamGroup> groups_;
  std::vector<GroupState> state_;
};

class Sgd : public GroupedOptimizer {
 public:
  std::string description() const override;
  WarmupTraits warmup_traits() const override { return {true, true}; }

 protected:
  std::vector<std::string> slot_names() const override { return {"momentum_buffer"}; }
  void update(ParamGroup& group, GroupState& state, const std::vector<torch::Tensor>& params,
              const std::vector<torch::Tensor>& grads,
              std::map<std::string, std::vector<torch::Tensor>>& slots,
              const torch::Tensor& keep) override;
};

// Adam with L2 weight decay added to the gradient, or AdamW with decoupled decay.
class Adam : public GroupedOptimizer {
 public:
  explicit Adam(bool decoupled) : decoupled_(decoupled) {}
  std::string description() const override;
  // `momentum` is beta1: warmup leaves it alone.
  WarmupTraits warmup_traits() const override { return {true, false}; }
  double beta2 = 0.999, eps = 1e-8;

 protected:
  std::vector<std::string> slot_names() const override { return {"exp_avg", "exp_avg_sq"}; }
  void update(ParamGroup& group, GroupState& state, const std::vector<torch::Tensor>& params,
              const std::vector<torch::Tensor>& grads,
              std::map<std::string, std::vector<torch::Tensor>>& slots,
              const torch::Tensor& keep) override;

 private:
  bool decoupled_;
};

// NAdam (torch.optim.NAdam: L2 weight decay, momentum_decay 4e-3): Adam with Nesterov
// momentum whose beta1 is scheduled by the product of the steps' mu.
class NAdam : public GroupedOptimizer {
 public:
  std::string description() const override;
  WarmupTraits warmup_traits() const override { return {true, false}; }
  double beta2 = 0.999, eps = 1e-8, momentum_decay = 4e-3;

 protected:
  std::vector<std::string> slot_names() const override { return {"exp_avg", "exp_avg_sq"}; }
  std::map<std::string, double> scalar_names() const override { return {{"mu_product", 1.0}}; }
  void update(ParamGroup& group, GroupState& state, const std::vector<torch::Tensor>& params,
              const std::vector<torch::Tensor>& grads,
              std::map<std::string, std::vector<torch::Tensor>>& slots,
              const torch::Tensor& keep) override;
};

// RAdam (torch.optim.RAdam: L2 weight decay): Adam whose adaptive step is rectified by the
// variance of its second moment, and plain bias-corrected momentum while that variance is
// intractable (the first steps).
class RAdam : public GroupedOptimizer {
 public:
  std::string description() const override;
  WarmupTraits warmup_traits() const override { return {true, false}; }
  double beta2 = 0.999, eps = 1e-8;

 protected:
  std::vector<std::string> slot_names() const override { return {"exp_avg", "exp_avg_sq"}; }
  void update(ParamGroup& group, GroupState& state, const std::vector<torch::Tensor>& params,
              const std::vector<torch::Tensor>& grads,
              std::map<std::string, std::vector<torch::Tensor>>& slots,
              const torch::Tensor& keep) override;
};

// Adamax (torch.optim.Adamax: L2 weight decay): Adam with the infinity norm of past gradients
// in place of the second moment.
class Adamax : public GroupedOptimizer {
 public:
  std::string description() const override;
  WarmupTraits warmup_traits() const override { return {true, false}; }
  double beta2 = 0.999, eps = 1e-8;

 protected:
  std::vector<std::string> slot_names() const override { return {"exp_avg", "exp_inf"}; }
  void update(ParamGroup& group, GroupState& state, const std::vector<torch::Tensor>& params,
              const std::vector<torch::Tensor>& grads,
              std::map<std::string, std::vector<torch::Tensor>>& slots,
              const torch::Tensor& keep) override;
};

// RMSprop (torch.optim.RMSprop: alpha 0.99, not centered, L2 weight decay) with momentum:
// Ultralytics passes its groups a `momentum`, so warmup ramps it as SGD's.
class RmsProp : public GroupedOptimizer {
 public:
  std::string description() const override;
  double alpha = 0.99, eps = 1e-8;

 protected:
  std::vector<std::string> slot_names() const override { return {"square_avg", "momentum_buffer"}; }
  void update(ParamGroup& group, GroupState& state, const std::vector<torch::Tensor>& params,
              const std::vector<torch::Tensor>& grads,
              std::map<std::string, std::vector<torch::Tensor>>& slots,
              const torch::Tensor& keep) override;
};

}  // namespace yoloflow::optim
