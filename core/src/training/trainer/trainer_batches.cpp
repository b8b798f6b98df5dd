// The trainer's epoch, batch by batch, as the graph runner hands them over (trainer_driver.h).
#include <algorithm>

#include "training/compose/pixel_composer.h"
#include "training/step/multi_scale.h"
#include "training/trainer/trainer_driver.h"
#include "yoloflow/sample.h"

namespace yoloflow::core {

void Trainer::begin_epoch(int epoch) {
  frozen_.train(model_->module());  // after validation, which left every layer in train mode
  first_batch_of_epoch_ = true;
  epoch_cut_ = false;
  last_batch_end_ = Clock::now();
  if (continue_epoch_) {
    // The epoch a previous process stopped in: its counters and running totals were restored.
    continue_epoch_ = false;
    display_.epoch_started(state_.step);
    epoch_start_ = Clock::now() - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(resumed_epoch_seconds_));
    return;
  }
  if (const CapturedStep* c = engine_->captured()) {
    eager_steps_before_ = c->eager_steps();
    replays_before_ = c->replays();
  }
  state_.epoch = epoch;
  epoch_start_ = Clock::now();
  state_.oom_retries = 0;
  state_.step = 0;
  state_.images = 0;
  state_.next_sequence = 0;
  display_.epoch_started(0);
  reset_loss_sum(torch::zeros({static_cast<std::int64_t>(state_.loss_names.size())}));
}

void Trainer::train_batch(Batch& batch) {
  // Batches already assembled when the run asked to stop are left for the resumed run.
  if (stopping_) return;
  // The last epoch's checkpoint could not be written (a full disk): stop here, where
  // last.pt and results.csv still agree, rather than train epochs that cannot be kept.
  if (checkpoints_->failed()) checkpoints_->wait();
  const auto t0 = Clock::now();
  const double waited = std::chrono::duration<double>(t0 - last_batch_end_).count();
  // A batch-size schedule, or an epoch of fewer samples than a batch, sets the schedule again.
  if (first_batch_of_epoch_ && batch.size != state_.batch) set_batch(batch.size);
  first_batch_of_epoch_ = false;
  // Composed pixels are copied back for the pictures of an epoch's first batches only.
  placement_->waited(waited);
  const torch::Tensor pixels = batch_pixels(batch, placement_->composer(), state_.step < kPicturedBatches);
  CallbackRequests before;
  callbacks_.batch_start(batch, progress(), before);
  const std::int64_t ni = state_.step + schedule_->batches_per_epoch() * state_.epoch;  // iteration over the run
  schedule_->apply(state_.epoch, ni);
  const double multi_scale = p_.get_float("multi_scale");
  const int longer = static_cast<int>(std::max(batch.height, batch.width));
  const int step_size = multi_scale > 0.0 ? multi_scale_size(longer, multi_scale, static_cast<int>(largest_stride(model_->head())),
                                                             ctx_.seed, ni)
                                          : 0;
  display_.batch_arrived(step_size > 0 ? step_size : longer, batch.has_target(targets::kBoxes) ? batch.boxes().rows() : -1);
  if (profile_) profile_->begin(state_.epoch, state_.step, state_.global_step, waited);

  const LossTargets targets = (*targets_)(batch, engine_->captured() != nullptr, state_.epoch, state_.step);
  // A captured graph bakes in the loss's parameters and the precision's autocast.
  engine_->train(state_, pixels, targets, batch.pixels, step_size, schedule_->accumulate(), loss_->key() + precision_key_);
  if (profile_) {
    profile_->end_phase(StepProfile::kOptimizer);
    profile_->end_step();
  }

  ++state_.step;
  ++steps_this_process_;
  if (!display_.first_step_reported() && state_.micro == 0) {
    if (options_.on_first_step) options_.on_first_step();
    display_.report_first_step(device_, steps_this_process_);
  }
  state_.images += batch.size;
  // The data position is global: W ranks in step have consumed every position below this
  // rank's last one plus W (ranks deal positions r, r+W, ...), whatever W the resume uses.
  const std::uint64_t world = dp_ ? static_cast<std::uint64_t>(dp_->world_size()) : 1;
  for (const auto& s : batch.samples) state_.next_sequence = std::max<std::uint64_t>(state_.next_sequence, s.sequence + world);
  display_.batch_timed(waited, std::chrono::duration<double>(Clock::now() - t0).count());
  after_batch(before);
}

// The progress line and bar, the callbacks' batch end, and what they and the run's limits ask for.
void Trainer::after_batch(const CallbackRequests& before) {
  if (state_.step % p_.get_int("log_every") == 0 || state_.step == schedule_->batches_per_epoch()) {
    display_.log_progress(displayed(), optimizer_->groups(), precision_->scale(), ctx_.reporter);
  }
  if (dist::is_main_process()) display_.show_status(displayed());
  CallbackRequests after;
  callbacks_.batch_end(progress(), after);
  act_mid_epoch(before);
  act_mid_epoch(after);
  const std::int64_t budget = p_.get_int("max_steps");
  if (budget > 0 && steps_this_process_ >= budget) stop("max_steps: " + std::to_string(budget) + " batches trained in this process");
  if (!stopping_) check_time_budget();
  last_batch_end_ = Clock::now();
}

void Trainer::finish_accumulation() {
  // Data parallel: a rank that skipped unreadable samples ran fewer batches; it takes the
  // missing steps with zero gradients so that its collectives still pair with the others'.
  // An epoch the time budget ended early ends where the ranks decided together.
  while (dp_ && !epoch_cut_ && state_.step < schedule_->batches_per_epoch()) {
    schedule_->apply(state_.epoch, state_.step + schedule_->batches_per_epoch() * state_.epoch);
    ++state_.step;
    if (++state_.micro >= schedule_->accumulate()) engine_->optimizer_step(state_);
    check_time_budget();  // as the ranks with this batch do
  }
  if (state_.micro > 0) engine_->optimizer_step(state_);  // the epoch's last partial accumulation
  engine_->log_capture_counts();
}

// In place once it exists: a captured step adds into this very tensor.
void Trainer::reset_loss_sum(const torch::Tensor& values) {
  if (state_.loss_sum.defined()) {
    state_.loss_sum.copy_(values);
  } else {
    state_.loss_sum = values.to(device_);
  }
}

void Trainer::set_batch(std::int64_t batch) {
  state_.batch = batch;
  // The graph runner tells how many samples an epoch has.
  schedule_->set_batch(batch, ctx_.samples_per_epoch);
}

// What callbacks asked for during a batch: checkpoints now; a stop after this batch (in a
// data-parallel run at the epoch's end, where every rank stops together).
void Trainer::act_mid_epoch(const CallbackRequests& r) {
  if (!r.checkpoints.empty()) save(r.checkpoints, /*mid_epoch=*/true, -1.0);
  if (r.stop_reason.empty()) return;
  if (dp_) {
    pending_stop_ = r.stop_reason;
  } else {
    stop(r.stop_reason);
  }
}

// A spent budget ends the epoch after this batch (the graph drops what it has assembled), and
// the epoch is then the run's last. Data parallel: on rank 0's clock, so that every rank ends
// the epoch after the same batch; one broadcast a batch while a budget is set.
void Trainer::check_time_budget() {
  if (!budget_.on() || epoch_cut_) return;
  const bool spent = dp_ ? dp_->rank0_decides(budget_.spent()) : budget_.spent();
  if (!spent) return;
  epoch_cut_ = true;
  control_.end_epoch_early();
}

void Trainer::stop(const std::string& reason) {
  if (stopping_) return;
  stopping_ = true;
  control_.request_stop(reason);
}

}  // namespace yoloflow::core
