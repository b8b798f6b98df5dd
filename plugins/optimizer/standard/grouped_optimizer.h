#pragma once
// What sgd, adam, adamw and auto share: parameters, the host's groups, per-parameter state
// slots saved by name, and the skip flag turned into a device-side "keep" factor.
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

// Per group: named state slots, one tensor per parameter, plus a step counter kept on the
// device (a skipped step must not count, and the host may not read the flag).
struct GroupState {
  std::map<std::string, std::vector<torch::Tensor>> slots;
  torch::Tensor step;  // 0-dim float
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
  NamedTensors state() const override;  // "<group>.<index>.<slot>", "<group>.step"
  void load_state(const std::map<std::string, torch::Tensor>& state) override;

  OptimizerParams& options() { return opt_; }

 protected:
  virtual std::vector<std::string> slot_names() const = 0;
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

}  // namespace yoloflow::optim
