#include "training/trainer/optimizer_schedule.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "training/trainer/param_groups.h"
#include "yoloflow/error.h"
#include "yoloflow/log.h"

namespace yoloflow::core {

OptimizerSchedule::OptimizerSchedule(const Scheduler& scheduler, WarmupOptions warmup, std::int64_t nominal_batch,
                                     std::int64_t world, int epochs)
    : scheduler_(scheduler), warmup_options_(warmup), nominal_batch_(nominal_batch), world_(world), epochs_(epochs) {}

void OptimizerSchedule::set_batch(std::int64_t batch, std::int64_t images_per_epoch) {
  batch_ = batch;
  images_per_epoch_ = images_per_epoch;
  accumulate_ratio_ = static_cast<double>(nominal_batch_) / static_cast<double>(batch * world_);
  target_accumulate_ = std::max<std::int64_t>(std::llround(accumulate_ratio_), 1);
  accumulate_ = target_accumulate_;
  // The last batch of an epoch may be partial.
  batches_per_epoch_ = std::max<std::int64_t>((images_per_epoch + batch - 1) / batch, 1);
  if (!optimizer_) return;
  optimizer_->groups()[0].weight_decay =
      scaled_weight_decay(base_weight_decay_, batch * world_ * target_accumulate_, nominal_batch_);
  warmup_ = std::make_unique<Warmup>(warmup_options_, batches_per_epoch_);
  YF_LOG_INFO("batch " << batch << " x accumulate " << target_accumulate_ << " (nominal " << nominal_batch_ << "), "
                       << batches_per_epoch_ << " batches an epoch");
}

void OptimizerSchedule::attach(Optimizer& optimizer, torch::nn::Module& module, int nc, const std::string& where) {
  OptimizerSetup setup;
  setup.nc = nc;
  setup.nominal_batch = nominal_batch_;
  setup.total_iterations = planned_iterations(images_per_epoch_, batch_, world_, nominal_batch_, epochs_);
  optimizer.setup(recipe_param_groups(module), setup);
  auto& g = optimizer.groups();
  base_weight_decay_ = g[0].weight_decay;
  finish_recipe_groups(g, scaled_weight_decay(base_weight_decay_, batch_ * world_ * target_accumulate_, nominal_batch_));
  for (const auto& grp : g) {
    if (grp.initial_lr <= 0.0) {
      std::ostringstream lr;
      lr << grp.initial_lr;
      throw InvalidInput(where + ": " + optimizer.description() + " left the '" + grp.name + "' group with learning rate " +
                         lr.str() + " after setup(); an optimizer sets lr and initial_lr of every group (yoloflow/optimizer.h)");
    }
  }
  base_momentum_ = g[0].momentum;
  const WarmupTraits traits = optimizer.warmup_traits();
  warmup_momentum_ = traits.momentum;
  if (!traits.bias_lr) warmup_options_.bias_lr = 0.0;  // the optimizer says the bias warmup does not apply
  warmup_ = std::make_unique<Warmup>(warmup_options_, batches_per_epoch_);
  optimizer_ = &optimizer;
  YF_LOG_INFO("optimizer: " << optimizer.description() << "; batch " << batch_
                            << (world_ > 1 ? " x " + std::to_string(world_) + " ranks" : std::string()) << " x accumulate "
                            << target_accumulate_ << " (nominal " << nominal_batch_ << "), weight decay "
                            << g[0].weight_decay << " on the weights group");
}

void OptimizerSchedule::apply(int epoch, std::int64_t iteration) {
  auto& groups = optimizer_->groups();
  const double f = scheduler_.lr_factor(epoch, std::max(1, epochs_));
  if (warmup_->active(iteration)) {
    // Towards the unrounded ratio, rounded half to even each step, as Ultralytics ramps it.
    accumulate_ = std::max<std::int64_t>(
        1, static_cast<std::int64_t>(std::nearbyint(warmup_->ramp(iteration, 1.0, accumulate_ratio_))));
    for (std::size_t j = 0; j < groups.size(); ++j) {
      const double start = (j == 2) ? warmup_->options().bias_lr : 0.0;
      groups[j].lr = warmup_->ramp(iteration, start, groups[j].initial_lr * f);
      if (warmup_momentum_) groups[j].momentum = warmup_->ramp(iteration, warmup_->options().momentum, base_momentum_);
    }
  } else {
    accumulate_ = target_accumulate_;
    for (auto& g : groups) {
      g.lr = g.initial_lr * f;
      if (warmup_momentum_) g.momentum = base_momentum_;
    }
  }
}

}  // namespace yoloflow::core
