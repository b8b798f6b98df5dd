#include "training/trainer/train_checkpoints.h"

#include <algorithm>
#include <vector>

#include "training/model/weights_io.h"
#include "yoloflow/error.h"
#include "yoloflow/log.h"

namespace yoloflow::core {

Checkpoint make_train_checkpoint(const TrainState& state, const TrainingParts& parts, bool mid_epoch,
                                 double epoch_seconds, nlohmann::json meta, TrainCallbacks::SavedTensors callbacks) {
  Checkpoint c;
  for (const auto& kv : parts.model.module().named_parameters()) c.model.emplace_back(kv.key(), kv.value());
  for (const auto& kv : parts.model.module().named_buffers()) c.model.emplace_back(kv.key(), kv.value());
  c.ema = std::move(callbacks.deploy);
  c.ema_updates = callbacks.deploy_averaged_steps;
  c.callbacks = std::move(callbacks.own);
  if (parts.optimizer != nullptr) c.optimizer = parts.optimizer->state();
  c.precision = parts.precision.state();
  c.global_step = state.global_step;
  c.best_fitness = state.best_fitness;
  meta["architecture"] = parts.model.architecture();
  meta["nc"] = parts.model.head().nc;
  meta["total_seconds"] = state.total_seconds;
  meta["batch"] = state.batch;
  meta["micro_batch"] = state.micro_batch;
  if (mid_epoch) {
    c.epoch = state.epoch;
    c.step_in_epoch = state.step;
    c.next_sequence = state.next_sequence;
    const auto l = state.loss_sum.to(torch::kCPU, torch::kDouble).contiguous();
    meta["epoch_loss_sum"] = std::vector<double>(l.data_ptr<double>(), l.data_ptr<double>() + l.numel());
    meta["epoch_images"] = state.images;
    meta["epoch_oom_retries"] = state.oom_retries;
    meta["epoch_seconds"] = epoch_seconds;
    meta["micro"] = state.micro;
    if (state.micro > 0 && parts.optimizer != nullptr) {
      for (const auto& np : parts.model.module().named_parameters()) {
        if (np.value().grad().defined()) c.grads.emplace_back(np.key(), np.value().grad());
      }
    }
  } else {
    c.epoch = state.epoch + 1;
  }
  c.meta = std::move(meta);
  return c;
}

void restore_train_checkpoint(const Checkpoint& ck, const std::string& path, const TrainingParts& parts,
                              TrainState& state) {
  const std::string arch = ck.meta.value("architecture", std::string());
  Model& model = parts.model;
  if (arch != model.architecture() || ck.meta.value("nc", -1) != model.head().nc) {
    throw InvalidInput(path + " holds a " + arch + " for " + std::to_string(ck.meta.value("nc", -1)) +
                       " classes, but this pipeline builds a " + model.architecture() + " for " +
                       std::to_string(model.head().nc) + " classes: a resumed run keeps its model and its data's "
                       "classes. To train another model or on other classes, start a new run from these weights "
                       "(weights=" + path + ")");
  }
  torch::NoGradGuard no_grad;
  const auto weights = to_map(ck.model);
  const auto ema = to_map(ck.ema);
  // Every tensor checked (shape and kind of dtype, the EMA's copy too: weights_io.h) before any
  // is copied, so a refused checkpoint leaves the model as it was.
  auto check_into = [&](const std::string& name, const torch::Tensor& dst) {
    const auto it = weights.find(name);
    if (it == weights.end()) throw InvalidInput(path + ": no entry '" + name + "' for the model");
    check_fits(dst, it->second, "model." + name, path);
    if (const auto e = ema.find(name); e != ema.end()) check_fits(dst, e->second, "ema." + name, path);
  };
  for (const auto& np : model.module().named_parameters()) check_into(np.key(), np.value());
  for (const auto& nb : model.module().named_buffers()) check_into(nb.key(), nb.value());
  for (auto& np : model.module().named_parameters()) np.value().copy_(weights.at(np.key()));
  for (auto& nb : model.module().named_buffers()) nb.value().copy_(weights.at(nb.key()));
  parts.precision.load_state(to_map(ck.precision));
  state.global_step = ck.global_step;
  state.best_fitness = ck.best_fitness;
  state.total_seconds = ck.meta.value("total_seconds", 0.0);
  // A micro-batch that an out-of-memory error lowered stays lowered (a smaller one in the
  // pipeline wins).
  const std::int64_t micro_batch = state.micro_batch;
  if (const auto saved = ck.meta.value("micro_batch", std::int64_t{0});
      saved > 0 && (state.micro_batch <= 0 || saved < state.micro_batch)) {
    state.micro_batch = saved;
  }
  if (state.micro_batch != micro_batch) YF_LOG_INFO("resume: micro_batch " << state.micro_batch << " (from " << path << ")");
  YF_LOG_INFO("resuming from " << path << ": epoch " << ck.epoch + 1 << ", batch " << ck.step_in_epoch
                               << " (sample position " << ck.next_sequence << "), " << state.global_step
                               << " optimizer steps so far");
}

TrainCallbacks::SavedTensors callback_tensors(const Checkpoint& ck) {
  TrainCallbacks::SavedTensors out;
  out.own = ck.callbacks;
  out.deploy = ck.ema;
  out.deploy_averaged_steps = ck.ema_updates;
  return out;
}

void restore_optimizer(const Checkpoint& ck, torch::nn::Module& module, Optimizer& optimizer,
                       const torch::Device& device, TrainState& state) {
  // Empty when the previous process stopped before its first batch: nothing to restore.
  if (!ck.optimizer.empty()) optimizer.load_state(to_map(ck.optimizer));
  const auto grads = to_map(ck.grads);
  for (auto& np : module.named_parameters()) {
    const auto it = grads.find(np.key());
    if (it != grads.end()) np.value().mutable_grad() = it->second.to(device).clone();
  }
  state.micro = ck.meta.value("micro", std::int64_t{0});
}

double resume_epoch(const Checkpoint& ck, TrainState& state) {
  state.epoch = ck.epoch;
  state.step = ck.step_in_epoch;
  state.next_sequence = ck.next_sequence;
  state.images = ck.meta.value("epoch_images", std::int64_t{0});
  state.oom_retries = ck.meta.value("epoch_oom_retries", std::int64_t{0});
  return ck.meta.value("epoch_seconds", 0.0);
}

std::vector<std::string> weight_paths(const std::string& run_dir, const std::vector<std::string>& files) {
  std::vector<std::string> paths;
  for (const auto& f : files) {
    const std::string path = run_dir + "/weights/" + f;
    if (std::find(paths.begin(), paths.end(), path) == paths.end()) paths.push_back(path);
  }
  return paths;
}

}  // namespace yoloflow::core
