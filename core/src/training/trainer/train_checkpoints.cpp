#include "training/trainer/train_checkpoints.h"

#include <algorithm>
#include <vector>

#include "training/model/weights_io.h"
#include "training/step/frozen_layers.h"
#include "yoloflow/error.h"
#include "yoloflow/log.h"

namespace yoloflow::core {

Checkpoint make_train_checkpoint(const TrainState& state, const TrainingParts& parts, bool mid_epoch,
                                 double epoch_seconds, nlohmann::json meta) {
  Checkpoint c;
  for (const auto& kv : parts.model.module().named_parameters()) c.model.emplace_back(kv.key(), kv.value());
  for (const auto& kv : parts.model.module().named_buffers()) c.model.emplace_back(kv.key(), kv.value());
  TrainCallbacks::SavedTensors callbacks = parts.callbacks.save_tensors();
  c.ema = std::move(callbacks.deploy);
  c.ema_updates = callbacks.deploy_averaged_steps;
  c.callbacks = std::move(callbacks.own);
  c.optimizer = parts.optimizer.state();
  c.precision = parts.precision.state();
  c.global_step = state.global_step;
  c.best_fitness = state.best_fitness;
  meta["architecture"] = parts.model.architecture();
  meta["nc"] = parts.model.head().nc;
  meta["callbacks"] = parts.callbacks.states();
  meta["train_state"] = to_json(saved_train_state(state, mid_epoch, epoch_seconds, parts.frozen_layers));
  if (mid_epoch) {
    c.epoch = state.epoch;
    c.step_in_epoch = state.step;
    c.next_sequence = state.next_sequence;
    if (state.micro > 0) {
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

ResumePoint resume_point(const Checkpoint& ck) {
  return {ck.epoch, ck.next_sequence, ck.meta.value("epochs", 0)};
}

namespace {

// Refuses what a continuing run cannot take, before anything is copied.
void check_same_run(const Checkpoint& ck, const std::string& path, const std::string& freeze_where,
                    const TrainingParts& parts, const SavedTrainState& saved) {
  const std::string arch = ck.meta.value("architecture", std::string());
  Model& model = parts.model;
  if (arch != model.architecture() || ck.meta.value("nc", -1) != model.head().nc) {
    throw InvalidInput(path + " holds a " + arch + " for " + std::to_string(ck.meta.value("nc", -1)) +
                       " classes, but this pipeline builds a " + model.architecture() + " for " +
                       std::to_string(model.head().nc) + " classes: a resumed run keeps its model and its data's "
                       "classes. To train another model or on other classes, start a new run from these weights "
                       "(weights=" + path + ")");
  }
  // The optimizer's state is per trained parameter: a resumed run trains the same ones.
  if (saved.frozen_layers != parts.frozen_layers) {
    auto text = [](const std::vector<std::int64_t>& l) { return l.empty() ? std::string("none") : layer_list_text(l); };
    throw InvalidInput(freeze_where + ": " + text(parts.frozen_layers) + " here, but " + path + " trained with " +
                       text(saved.frozen_layers) + " frozen; a resumed run keeps its frozen layers. To freeze "
                       "others, start a new run from its weights (weights=" + path + ")");
  }
}

void restore_weights(const Checkpoint& ck, const std::string& path, Model& model) {
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
}

// The optimizer's state, and the gradients accumulated before the stop so that the pending
// step sees them all.
void restore_optimizer(const Checkpoint& ck, const TrainingParts& parts, const torch::Device& device) {
  // Empty when the previous process stopped before its first batch: nothing to restore.
  if (!ck.optimizer.empty()) parts.optimizer.load_state(to_map(ck.optimizer));
  const auto grads = to_map(ck.grads);
  for (auto& np : parts.model.module().named_parameters()) {
    const auto it = grads.find(np.key());
    if (it != grads.end()) np.value().mutable_grad() = it->second.to(device).clone();
  }
}

}  // namespace

double restore_train_checkpoint(const Checkpoint& ck, const std::string& path, const std::string& freeze_where,
                                const TrainingParts& parts, const torch::Device& device, TrainState& state) {
  SavedTrainState saved;
  try {
    saved = read_saved_train_state(ck.meta);
  } catch (const nlohmann::json::exception&) {
    // A value of another type: an edited or damaged file, refused before anything is restored.
    throw InvalidInput(path + ": its train_state record holds a value of the wrong type (an edited or damaged "
                       "checkpoint); resume from another checkpoint of the run, or start from its weights (weights=" +
                       path + ")");
  }
  check_same_run(ck, path, freeze_where, parts, saved);
  restore_weights(ck, path, parts.model);
  parts.precision.load_state(to_map(ck.precision));
  restore_optimizer(ck, parts, device);
  parts.callbacks.load_states(ck.meta.value("callbacks", nlohmann::json::object()));
  TrainCallbacks::SavedTensors callbacks;
  callbacks.own = ck.callbacks;
  callbacks.deploy = ck.ema;
  callbacks.deploy_averaged_steps = ck.ema_updates;
  parts.callbacks.load_tensors(callbacks);

  state.global_step = ck.global_step;
  state.best_fitness = ck.best_fitness;
  state.total_seconds = saved.total_seconds;
  state.epoch = ck.epoch;
  state.step = ck.step_in_epoch;
  state.next_sequence = ck.next_sequence;
  state.images = saved.images;
  state.oom_retries = saved.oom_retries;
  state.micro = saved.micro;
  std::vector<double> loss = saved.loss_sum;
  if (loss.size() != state.loss_names.size()) loss.assign(state.loss_names.size(), 0.0);
  state.loss_sum = torch::tensor(std::vector<float>(loss.begin(), loss.end())).to(device);
  // A micro-batch that an out-of-memory error lowered stays lowered (a smaller one in the
  // pipeline wins).
  const std::int64_t micro_batch = state.micro_batch;
  if (saved.micro_batch > 0 && (state.micro_batch <= 0 || saved.micro_batch < state.micro_batch)) {
    state.micro_batch = saved.micro_batch;
  }
  if (state.micro_batch != micro_batch) YF_LOG_INFO("resume: micro_batch " << state.micro_batch << " (from " << path << ")");
  YF_LOG_INFO("resuming from " << path << ": epoch " << ck.epoch + 1 << ", batch " << ck.step_in_epoch
                               << " (sample position " << ck.next_sequence << "), " << state.global_step
                               << " optimizer steps so far");
  return saved.epoch_seconds;
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
