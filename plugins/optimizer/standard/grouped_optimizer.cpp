#include "grouped_optimizer.h"

#include "yoloflow/error.h"

namespace yoloflow::optim {

void GroupedOptimizer::configure(const Params& params, const StageContext&) {
  opt_.lr0 = params.get_float("lr0");
  opt_.momentum = params.get_float("momentum");
  opt_.weight_decay = params.get_float("weight_decay");
  if (params.has("nesterov")) opt_.nesterov = params.get_bool("nesterov");
}

void GroupedOptimizer::setup(std::vector<ParamGroup> groups, const OptimizerSetup&) {
  groups_ = std::move(groups);
  state_.assign(groups_.size(), GroupState{});
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    auto& group = groups_[g];
    group.initial_lr = opt_.lr0;
    group.lr = opt_.lr0;
    group.momentum = opt_.momentum;
    group.weight_decay = opt_.weight_decay;  // the host scales it and takes it off norms and biases
    auto& st = state_[g];
    const auto device = group.params.empty() ? torch::Device(torch::kCPU) : group.params[0].device();
    const auto scalar = torch::TensorOptions().dtype(torch::kFloat).device(device);
    st.step = torch::zeros({}, scalar);
    for (const auto& [name, initial] : scalar_names()) st.scalars[name] = torch::full({}, initial, scalar);
    for (const auto& name : slot_names()) {
      auto& slot = st.slots[name];
      for (const auto& p : group.params) slot.push_back(torch::zeros_like(p));
    }
  }
}

void GroupedOptimizer::step(const torch::Tensor& skip) {
  torch::NoGradGuard no_grad;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    auto& group = groups_[g];
    auto& st = state_[g];
    if (group.params.empty()) continue;
    // Parameters without a gradient (unused this step) are left alone, as torch.optim does.
    std::vector<torch::Tensor> params, grads;
    std::map<std::string, std::vector<torch::Tensor>> slots;
    torch::Tensor keep, skip_mask;
    if (skip.defined()) {
      skip_mask = (skip != 0).to(group.params[0].device());
      keep = skip_mask.logical_not().to(torch::kFloat);
    }
    for (std::size_t i = 0; i < group.params.size(); ++i) {
      const auto& p = group.params[i];
      if (!p.grad().defined()) continue;
      params.push_back(p);
      // A skipped step may carry inf/NaN gradients: replace them so nothing else turns NaN.
      grads.push_back(skip_mask.defined() ? p.grad().masked_fill(skip_mask, 0.0) : p.grad());
      for (auto& [name, tensors] : st.slots) slots[name].push_back(tensors[i]);
    }
    if (params.empty()) continue;
    update(group, st, params, grads, slots, keep);
  }
}

NamedTensors GroupedOptimizer::state() const {
  NamedTensors out;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    const auto& name = groups_[g].name;
    out.emplace_back(name + ".step", state_[g].step);
    for (const auto& [scalar, value] : state_[g].scalars) out.emplace_back(name + "." + scalar, value);
    for (const auto& [slot, tensors] : state_[g].slots) {
      for (std::size_t i = 0; i < tensors.size(); ++i) {
        out.emplace_back(name + "." + std::to_string(i) + "." + slot, tensors[i]);
      }
    }
  }
  return out;
}

void GroupedOptimizer::load_state(const std::map<std::string, torch::Tensor>& state) {
  torch::NoGradGuard no_grad;
  auto load = [&](const std::string& key, torch::Tensor& into) {
    const auto it = state.find(key);
    if (it == state.end()) throw Error("optimizer state has no entry '" + key + "' (" + description() + ").");
    if (it->second.sizes() != into.sizes()) {
      throw Error("optimizer state entry '" + key + "' has shape " + std::string(c10::str(it->second.sizes())) +
                  ", expected " + std::string(c10::str(into.sizes())) + ".");
    }
    into.copy_(it->second);
  };
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    const auto& name = groups_[g].name;
    load(name + ".step", state_[g].step);
    for (auto& [scalar, value] : state_[g].scalars) load(name + "." + scalar, value);
    for (auto& [slot, tensors] : state_[g].slots) {
      for (std::size_t i = 0; i < tensors.size(); ++i) load(name + "." + std::to_string(i) + "." + slot, tensors[i]);
    }
  }
}

}  // namespace yoloflow::optim
