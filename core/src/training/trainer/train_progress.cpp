#include "training/trainer/train_progress.h"

#include <algorithm>

namespace yoloflow::core {

TrainProgress train_progress(const TrainState& state, int epochs, std::int64_t steps_in_epoch) {
  TrainProgress p;
  p.epoch = state.epoch;
  p.epochs = epochs;
  p.step = state.step;
  p.steps_in_epoch = steps_in_epoch;
  p.global_step = state.global_step;
  p.optimizer_stepped = state.micro == 0;
  return p;
}

ProgressSnapshot host_snapshot(const TrainState& state, int epochs, std::int64_t steps_in_epoch, double epoch_seconds) {
  ProgressSnapshot snap;
  snap.epoch = state.epoch;
  snap.epochs = epochs;
  snap.step = state.step;
  snap.steps_in_epoch = steps_in_epoch;
  snap.global_step = state.global_step;
  snap.images = state.images;
  snap.epoch_seconds = epoch_seconds;
  return snap;
}

ProgressSnapshot progress_snapshot(const TrainState& state, int epochs, std::int64_t steps_in_epoch,
                                   double epoch_seconds, const std::vector<ParamGroup>& groups) {
  ProgressSnapshot snap = host_snapshot(state, epochs, steps_in_epoch, epoch_seconds);
  const auto l = (state.loss_sum / std::max<std::int64_t>(state.step, 1)).to(torch::kCPU, torch::kDouble).contiguous();
  snap.losses = named_losses(state.loss_names, std::vector<double>(l.data_ptr<double>(), l.data_ptr<double>() + l.numel()));
  for (const auto& g : groups) snap.lrs.push_back(g.lr);
  return snap;
}

}  // namespace yoloflow::core
