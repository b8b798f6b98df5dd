#include "training/step/train_state.h"

#include <utility>

namespace yoloflow::core {

SavedTrainState saved_train_state(const TrainState& state, bool mid_epoch, double epoch_seconds,
                                  std::vector<std::int64_t> frozen_layers) {
  SavedTrainState s;
  s.batch = state.batch;
  s.micro_batch = state.micro_batch;
  s.total_seconds = state.total_seconds;
  s.frozen_layers = std::move(frozen_layers);
  if (mid_epoch) {
    s.micro = state.micro;
    s.images = state.images;
    s.oom_retries = state.oom_retries;
    s.epoch_seconds = epoch_seconds;
    if (state.loss_sum.defined()) {
      const auto l = state.loss_sum.to(torch::kCPU, torch::kDouble).contiguous();
      s.loss_sum.assign(l.data_ptr<double>(), l.data_ptr<double>() + l.numel());
    }
  }
  return s;
}

nlohmann::json to_json(const SavedTrainState& s) {
  return {{"micro", s.micro},
          {"images", s.images},
          {"oom_retries", s.oom_retries},
          {"batch", s.batch},
          {"micro_batch", s.micro_batch},
          {"total_seconds", s.total_seconds},
          {"epoch_seconds", s.epoch_seconds},
          {"loss_sum", s.loss_sum},
          {"frozen_layers", s.frozen_layers}};
}

SavedTrainState read_saved_train_state(const nlohmann::json& meta) {
  SavedTrainState s;
  const bool record = meta.contains("train_state") && meta["train_state"].is_object();
  const nlohmann::json& r = record ? meta["train_state"] : meta;
  // Each value under its record name, or under its earlier meta key.
  auto get = [&](const char* name, const char* earlier, auto fallback) {
    return r.value(record ? name : earlier, fallback);
  };
  s.micro = get("micro", "micro", std::int64_t{0});
  s.images = get("images", "epoch_images", std::int64_t{0});
  s.oom_retries = get("oom_retries", "epoch_oom_retries", std::int64_t{0});
  s.batch = get("batch", "batch", std::int64_t{0});
  s.micro_batch = get("micro_batch", "micro_batch", std::int64_t{0});
  s.total_seconds = get("total_seconds", "total_seconds", 0.0);
  s.epoch_seconds = get("epoch_seconds", "epoch_seconds", 0.0);
  s.loss_sum = get("loss_sum", "epoch_loss_sum", std::vector<double>{});
  s.frozen_layers = get("frozen_layers", "freeze", std::vector<std::int64_t>{});
  return s;
}

}  // namespace yoloflow::core
