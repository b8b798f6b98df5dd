#pragma once
// The contracts of the kinds that act on a training step's parameters and state: optimizer,
// precision strategy, and a callback's tensor hooks; with the stand-ins for the host they run
// against (parameter groups as the host builds them, a training view, checkpoint tensors).
// Header-only, compiled with the test's own LibTorch.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "yoloflow/callback.h"
#include "yoloflow/optimizer.h"
#include "yoloflow/precision.h"
#include "yoloflow/testing.h"
#include "yoloflow/testing_torch_fixtures.h"
#include "yoloflow/training_view.h"

namespace yoloflow::testing {

namespace detail {

// The view a callback's tensor hooks get of the run: `model`, its groups and a progress that the
// contract advances between hooks.
class View final : public TrainingView {
 public:
  View(torch::nn::Module& model, std::vector<ParamGroup> groups, TrainProgress progress)
      : model_(model), groups_(std::move(groups)), progress_(progress) {}
  torch::nn::Module& model() override { return model_; }
  const std::vector<ParamGroup>& param_groups() const override { return groups_; }
  TrainProgress progress() const override { return progress_; }

  torch::nn::Module& model_;
  std::vector<ParamGroup> groups_;
  TrainProgress progress_;
};

// Checkpoint tensors kept as CPU copies, so that what one instance saves can be loaded into
// another, as a resumed run's would be.
class Tensors final : public CheckpointTensors {
 public:
  void put(NamedTensors tensors) override {
    for (auto& [name, t] : tensors) own.emplace_back(name, t.detach().to(torch::kCPU).clone());
  }
  void put_deploy_weights(NamedTensors tensors, std::int64_t averaged_steps) override {
    ++deploy_puts;
    deploy.clear();
    for (auto& [name, t] : tensors) deploy.emplace_back(name, t.detach().to(torch::kCPU).clone());
    steps = averaged_steps;
  }
  const NamedTensors& get() const override { return own; }
  const NamedTensors& deploy_weights() const override { return deploy; }
  std::int64_t deploy_averaged_steps() const override { return steps; }
  NamedTensors own, deploy;
  std::int64_t steps = 0;
  int deploy_puts = 0;
};

inline bool same_tensors(const NamedTensors& a, const NamedTensors& b, std::string& why) {
  if (a.size() != b.size()) {
    why = std::to_string(a.size()) + " tensors, then " + std::to_string(b.size());
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].first != b[i].first) {
      why = "'" + a[i].first + "' comes back as '" + b[i].first + "'";
      return false;
    }
    if (!a[i].second.sizes().equals(b[i].second.sizes()) || !torch::equal(a[i].second, b[i].second)) {
      why = "'" + a[i].first + "' comes back with other values";
      return false;
    }
  }
  return true;
}

// Every parameter and buffer of `m`: where its storage is and its shape, to see that a hook
// wrote in place and replaced nothing.
inline std::vector<std::pair<const void*, std::vector<std::int64_t>>> identities(torch::nn::Module& m) {
  std::vector<std::pair<const void*, std::vector<std::int64_t>>> out;
  for (const auto& p : m.named_parameters()) out.emplace_back(p.value().data_ptr(), p.value().sizes().vec());
  for (const auto& b : m.named_buffers()) out.emplace_back(b.value().data_ptr(), b.value().sizes().vec());
  return out;
}

inline std::vector<at::Tensor> values(torch::nn::Module& m) {
  std::vector<at::Tensor> out;
  for (const auto& p : m.named_parameters()) out.push_back(p.value().detach().clone());
  return out;
}

inline bool same_values(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!torch::equal(a[i], b[i])) return false;
  }
  return true;
}

// Three groups as the host builds them ("weights", "norm", "bias"), of small tensors seeded
// by `seed`, every number 0 (setup() fills them).
inline std::vector<ParamGroup> groups_like_the_host(std::uint64_t seed) {
  auto g = at::detail::createCPUGenerator(seed);
  std::vector<ParamGroup> out(3);
  out[0].name = "weights";
  out[0].params = {at::randn({4, 3, 3, 3}, g).requires_grad_(true), at::randn({4, 4}, g).requires_grad_(true)};
  out[1].name = "norm";
  out[1].params = {at::ones({4}).requires_grad_(true)};
  out[2].name = "bias";
  out[2].params = {at::zeros({4}).requires_grad_(true), at::zeros({4}).requires_grad_(true)};
  return out;
}

inline void set_grads(std::vector<ParamGroup>& groups, double value) {
  int k = 0;
  for (auto& g : groups) {
    for (auto& p : g.params) {
      p.mutable_grad() = torch::full_like(p, value * (1 + (k++ % 3)));
    }
  }
}

inline std::vector<at::Tensor> group_values(const std::vector<ParamGroup>& groups) {
  std::vector<at::Tensor> out;
  for (const auto& g : groups) {
    for (const auto& p : g.params) out.push_back(p.detach().clone());
  }
  return out;
}

}  // namespace detail

// What an optimizer must do with three groups as the host hands them over (`fresh`: another
// instance with the same parameters): setup() sets lr and initial_lr > 0 on every group and a
// momentum and weight decay >= 0; a description; step() changes the parameters from their
// gradients and leaves them finite; a step with `skip` set leaves parameters and state
// unchanged; state() loaded into `fresh`, set up on copies of the same parameters, makes its next
// step equal to this one's.
inline std::vector<std::string> optimizer_contract(Optimizer& optimizer, Optimizer& fresh) {
  using detail::returns;
  std::vector<std::string> out;
  OptimizerSetup setup;
  setup.total_iterations = 100;
  if (!returns("setup", out, [&] { optimizer.setup(detail::groups_like_the_host(3), setup); })) return out;
  auto& groups = optimizer.groups();
  if (groups.size() != 3) return {"groups() has " + std::to_string(groups.size()) + " groups after setup of 3"};
  for (const auto& g : groups) {
    if (!(g.lr > 0) || !(g.initial_lr > 0)) out.push_back("group '" + g.name + "' has lr " + std::to_string(g.lr) + ", initial_lr " + std::to_string(g.initial_lr) + " after setup()");
    if (g.momentum < 0 || g.weight_decay < 0) out.push_back("group '" + g.name + "' has a negative momentum or weight decay");
  }
  std::string description;
  returns("description()", out, [&] { description = optimizer.description(); });
  if (description.empty()) out.push_back("description() is empty");

  detail::set_grads(groups, 0.5);
  const auto before = detail::group_values(groups);
  if (!returns("step", out, [&] { torch::NoGradGuard g; optimizer.step(at::Tensor()); })) return out;
  const auto after = detail::group_values(groups);
  if (detail::same_values(before, after)) out.push_back("step() did not change the parameters");
  for (const auto& v : after) {
    if (!detail::all_finite(v)) {
      out.push_back("step() left a parameter that is not finite");
      break;
    }
  }

  // A skipped step (an fp16 overflow): nothing moves, not even the state.
  NamedTensors state;
  returns("state()", out, [&] { state = optimizer.state(); });
  std::map<std::string, at::Tensor> saved;
  for (const auto& [name, t] : state) saved[name] = t.detach().clone();
  detail::set_grads(groups, 0.25);
  returns("step with skip", out, [&] { torch::NoGradGuard g; optimizer.step(torch::ones({})); });
  if (!detail::same_values(after, detail::group_values(groups))) out.push_back("step() with skip set changed the parameters");
  NamedTensors skipped_state;
  returns("state()", out, [&] { skipped_state = optimizer.state(); });
  std::string why;
  NamedTensors saved_list(saved.begin(), saved.end()), skipped_list;
  {
    std::map<std::string, at::Tensor> m(skipped_state.begin(), skipped_state.end());
    skipped_list.assign(m.begin(), m.end());
  }
  if (!detail::same_tensors(saved_list, skipped_list, why)) out.push_back("step() with skip set changed the state: " + why);

  // Resume: the same parameters and state in another instance step the same way.
  auto copies = detail::groups_like_the_host(99);
  {
    std::size_t k = 0;
    const auto now = detail::group_values(groups);
    for (auto& g : copies) {
      for (auto& p : g.params) p = now[k++].clone().requires_grad_(true);
    }
  }
  if (!returns("setup of another instance", out, [&] { fresh.setup(std::move(copies), setup); })) return out;
  if (!returns("load_state of another instance", out, [&] { fresh.load_state(saved); })) return out;
  auto& other = fresh.groups();
  for (std::size_t i = 0; i < groups.size() && i < other.size(); ++i) {
    other[i].lr = groups[i].lr;
    other[i].momentum = groups[i].momentum;
  }
  detail::set_grads(groups, 0.125);
  detail::set_grads(other, 0.125);
  returns("step", out, [&] { torch::NoGradGuard g; optimizer.step(at::Tensor()); });
  returns("step of the loaded instance", out, [&] { torch::NoGradGuard g; fresh.step(at::Tensor()); });
  const auto mine = detail::group_values(groups), theirs = detail::group_values(other);
  bool equal = mine.size() == theirs.size();
  for (std::size_t i = 0; equal && i < mine.size(); ++i) equal = torch::allclose(mine[i], theirs[i], 1e-6, 1e-7);
  if (!equal) out.push_back("an instance loaded with state() does not step as the saved one does");
  return out;
}

// What a precision strategy must do on `device`: say whether it runs there (with a reason when
// not; nothing else is checked then); a floating compute dtype; an autocast scope; scale_loss()
// multiplying by scale() > 0; unscale() dividing the gradients by it and, unless it never
// skips (undefined result), giving 0 for finite gradients and 1 when one is inf or NaN; update()
// accepting both; state() loaded into `fresh` giving the same scale.
inline std::vector<std::string> precision_contract(PrecisionStrategy& precision, PrecisionStrategy& fresh,
                                                   const c10::Device& device = c10::Device(c10::kCPU)) {
  using detail::returns;
  std::vector<std::string> out;
  std::string why_not;
  bool ok = false;
  if (!returns("supports", out, [&] { ok = precision.supports(device, why_not); })) return out;
  if (!ok) {
    if (why_not.empty()) out.push_back("supports() is false without a reason");
    return out;
  }
  const auto dtype = precision.compute_dtype();
  if (!at::isFloatingType(dtype)) out.push_back("compute_dtype() is not a floating type");
  {
    std::unique_ptr<AutocastScope> scope;
    if (!returns("autocast", out, [&] { scope = precision.autocast(device); })) return out;
    if (!scope) out.push_back("autocast() gave no scope");
  }
  double scale = 0;
  returns("scale()", out, [&] { scale = precision.scale(); });
  if (!(scale > 0) || !std::isfinite(scale)) return {"scale() is " + std::to_string(scale)};
  const auto loss = torch::tensor(2.0f, torch::TensorOptions().device(device));
  at::Tensor scaled;
  if (!returns("scale_loss", out, [&] { scaled = precision.scale_loss(loss); })) return out;
  if (!scaled.defined() || std::abs(scaled.item<double>() - 2.0 * scale) > 1e-6 * 2.0 * scale) {
    out.push_back("scale_loss(2) is not 2 x scale()");
  }
  auto grad = torch::full({4}, static_cast<float>(3.0 * scale), torch::TensorOptions().device(device));
  at::Tensor found;
  if (!returns("unscale", out, [&] { found = precision.unscale({grad}); })) return out;
  if (!torch::allclose(grad.cpu(), torch::full({4}, 3.0f), 1e-4, 1e-5)) out.push_back("unscale() did not divide the gradients by scale()");
  const bool skips = found.defined();
  if (skips && (found.dim() != 0 || found.item<double>() != 0.0)) out.push_back("unscale() of finite gradients does not give 0");
  returns("update", out, [&] { precision.update(found); });
  auto bad = torch::full({4}, std::numeric_limits<float>::infinity(), torch::TensorOptions().device(device));
  at::Tensor found_bad;
  if (returns("unscale of inf gradients", out, [&] { found_bad = precision.unscale({bad}); })) {
    if (skips && (!found_bad.defined() || found_bad.item<double>() != 1.0)) out.push_back("unscale() of inf gradients does not give 1");
    returns("update after inf", out, [&] { precision.update(found_bad); });
  }
  NamedTensors state;
  returns("state()", out, [&] { state = precision.state(); });
  std::map<std::string, at::Tensor> m(state.begin(), state.end());
  if (returns("load_state of another instance", out, [&] { fresh.load_state(m); })) {
    // A resumed run uses it on the same device before its scale matters.
    returns("autocast of the loaded instance", out, [&] { (void)fresh.autocast(device); });
    double a = 0, b = 0;
    returns("scale()", out, [&] { a = precision.scale(); b = fresh.scale(); });
    if (a != b) out.push_back("an instance loaded with state() has scale " + std::to_string(b) + ", not " + std::to_string(a));
  }
  return out;
}

// What a callback's tensor hooks must do on `model`'s module over `steps` optimizer steps (the
// parameters moved between them, as training does) and a validation: write the model only in
// place (every parameter and buffer keeps its storage and shape), leave after
// on_validation_end the values it had before on_validation_start, and give back through
// `fresh`'s load_tensors the tensors save_tensors put (its own and the weights to deploy).
inline std::vector<std::string> callback_tensors_contract(Callback& callback, Callback& fresh, torch::nn::Module& model,
                                                          int steps = 3) {
  using detail::returns;
  std::vector<std::string> out;
  const auto identity = detail::identities(model);
  TrainProgress progress;
  progress.steps_in_epoch = steps;
  std::vector<ParamGroup> groups(1);
  groups[0].name = "weights";
  groups[0].lr = groups[0].initial_lr = 0.01;
  detail::View view(model, groups, progress);
  for (int k = 0; k < steps; ++k) {
    {
      torch::NoGradGuard no_grad;
      for (auto& p : model.parameters()) p.add_(0.01 * (k + 1));
    }
    view.progress_.step = k + 1;
    view.progress_.global_step = k + 1;
    if (!returns("on_optimizer_step", out, [&] { callback.on_optimizer_step(view); })) return out;
  }
  const auto trained = detail::values(model);
  if (!returns("on_validation_start", out, [&] { callback.on_validation_start(view); })) return out;
  if (!returns("on_validation_end", out, [&] { callback.on_validation_end(view); })) return out;
  if (!detail::same_values(trained, detail::values(model))) out.push_back("the model's values after on_validation_end differ from before on_validation_start");
  if (detail::identities(model) != identity) out.push_back("a hook replaced a tensor of the model or changed its shape");

  detail::Tensors saved;
  if (!returns("save_tensors", out, [&] { callback.save_tensors(saved); })) return out;
  if (saved.deploy_puts > 1) out.push_back("save_tensors put the weights to deploy more than once");
  if (!returns("load_tensors of another instance", out, [&] { fresh.load_tensors(saved); })) return out;
  // The other instance sees the model first through a hook, as a resumed run's does.
  detail::Tensors again;
  if (!returns("save_tensors of the loaded instance", out, [&] { fresh.save_tensors(again); })) return out;
  std::string why;
  if (!detail::same_tensors(saved.own, again.own, why)) out.push_back("its tensors do not come back from load_tensors: " + why);
  if (!detail::same_tensors(saved.deploy, again.deploy, why)) out.push_back("the weights to deploy do not come back from load_tensors: " + why);
  if (saved.steps != again.steps) out.push_back("the averaged steps do not come back from load_tensors");
  return out;
}

}  // namespace yoloflow::testing
