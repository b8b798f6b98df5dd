#include "training/callbacks/model_ema.h"

#include <cmath>

#include "yoloflow/error.h"
#include "yoloflow/torch_compat.h"

namespace yoloflow::core {

std::vector<torch::Tensor> ModelEma::model_tensors(torch::nn::Module& model) {
  std::vector<torch::Tensor> out;
  for (const auto& p : model.named_parameters(true)) out.push_back(p.value());
  for (const auto& b : model.named_buffers(true)) out.push_back(b.value());
  return out;
}

ModelEma::ModelEma(torch::nn::Module& model, double decay, double tau)
    : decay_(decay), tau_(tau) {
  torch::NoGradGuard no_grad;
  for (const auto& p : model.named_parameters(true)) names_.push_back(p.key());
  for (const auto& b : model.named_buffers(true)) names_.push_back(b.key());
  const auto tensors = model_tensors(model);
  const std::size_t parameters = model.parameters(true).size();  // model_tensors lists them first
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    if (t.is_floating_point()) {
      (i < parameters && !t.requires_grad() ? other_index_ : float_index_).push_back(i);
      ema_.push_back(t.detach().to(torch::kFloat, /*non_blocking=*/false, /*copy=*/true));
    } else {
      other_index_.push_back(i);
      ema_.push_back(t.detach().clone());
    }
  }
}

void ModelEma::update(torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  const auto tensors = model_tensors(model);
  if (tensors.size() != ema_.size()) {
    throw Error("ModelEma: the model has " + std::to_string(tensors.size()) +
                " parameters and buffers, the EMA was made for " + std::to_string(ema_.size()) + ".");
  }
  ++updates_;
  // Decay ramps up from 0 so early, fast-changing weights are not averaged for long.
  const double d = decay_ * (1.0 - std::exp(-static_cast<double>(updates_) / tau_));
  std::vector<torch::Tensor> ema_f, model_f;
  ema_f.reserve(float_index_.size());
  model_f.reserve(float_index_.size());
  for (auto i : float_index_) {
    ema_f.push_back(ema_[i]);
    const auto& t = tensors[i];
    model_f.push_back(t.scalar_type() == torch::kFloat ? t.detach() : t.detach().to(torch::kFloat));
  }
  if (!ema_f.empty()) {
    at::_foreach_mul_(ema_f, d);
    at::_foreach_add_(ema_f, model_f, 1.0 - d);
  }
  // Integer buffers (BatchNorm's num_batches_tracked) are counters, and parameters that do not
  // train are constants: copied, not averaged (d v + (1 - d) v may round away from v).
  for (auto i : other_index_) ema_[i].copy_(tensors[i]);
}

std::vector<std::pair<std::string, torch::Tensor>> ModelEma::state() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  out.reserve(names_.size());
  for (std::size_t i = 0; i < names_.size(); ++i) out.emplace_back(names_[i], ema_[i]);
  return out;
}

void ModelEma::load_state(const std::map<std::string, torch::Tensor>& state, std::int64_t updates) {
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < names_.size(); ++i) {
    const auto it = state.find(names_[i]);
    if (it == state.end()) throw Error("EMA state has no entry '" + names_[i] + "'.");
    if (it->second.sizes() != ema_[i].sizes()) {
      throw Error("EMA state entry '" + names_[i] + "' has shape " +
                  std::string(c10::str(it->second.sizes())) + ", the model has " +
                  std::string(c10::str(ema_[i].sizes())) + ".");
    }
    ema_[i].copy_(it->second);
  }
  updates_ = updates;
}

std::vector<torch::Tensor> ModelEma::swap_into(torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  auto tensors = model_tensors(model);
  if (tensors.size() != ema_.size()) {
    throw Error("ModelEma::swap_into: the model does not match the EMA (" +
                std::to_string(tensors.size()) + " vs " + std::to_string(ema_.size()) + " tensors).");
  }
  std::vector<torch::Tensor> saved;
  saved.reserve(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    saved.push_back(tensors[i].detach().clone());
    tensors[i].copy_(ema_[i]);
  }
  return saved;
}

void ModelEma::restore(torch::nn::Module& model, const std::vector<torch::Tensor>& saved) {
  torch::NoGradGuard no_grad;
  auto tensors = model_tensors(model);
  if (tensors.size() != saved.size()) {
    throw Error("ModelEma::restore: " + std::to_string(saved.size()) + " saved tensors for a model with " +
                std::to_string(tensors.size()) + ".");
  }
  for (std::size_t i = 0; i < tensors.size(); ++i) tensors[i].copy_(saved[i]);
}

}  // namespace yoloflow::core
