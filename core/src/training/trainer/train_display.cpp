#include "training/trainer/train_display.h"

#include <torch/cuda.h>

#include "log/logging.h"
#include "runtime/util/process_clock.h"
#include "runtime/util/text_format.h"
#include "training/trainer/train_progress.h"
#include "yoloflow/log.h"

namespace yoloflow::core {

void TrainDisplay::built() { built_at_ = seconds_since_process_start(); }

void TrainDisplay::batch_arrived(int size, std::int64_t instances) {
  if (first_batch_at_ < 0.0) first_batch_at_ = seconds_since_process_start();
  size_ = size;
  instances_ = instances;
}

void TrainDisplay::log_progress(const DisplayedEpoch& at, const std::vector<ParamGroup>& groups, double loss_scale,
                                RunReporter* reporter) {
  ProgressSnapshot snap = progress_snapshot(at.state, at.epochs, at.batches_per_epoch, at.epoch_seconds, groups);
  snap.size = size_;
  snap.instances = instances_;
  shown_losses_ = snap.losses;
  snap.loss_scale = loss_scale;
  window_.report(snap, reporter);
}

void TrainDisplay::show_status(const DisplayedEpoch& at) {
  if (!status_line_shown()) return;
  const auto now = std::chrono::steady_clock::now();
  if (at.state.step != at.batches_per_epoch && std::chrono::duration<double>(now - status_drawn_).count() < 0.1) return;
  status_drawn_ = now;
  ProgressSnapshot s = host_snapshot(at.state, at.epochs, at.batches_per_epoch, at.epoch_seconds);
  s.losses = shown_losses_;
  s.size = size_;
  s.instances = instances_;
  set_status_line(status_line(s));
}

void TrainDisplay::report_first_step(const c10::Device& device, std::int64_t batches) {
  first_step_reported_ = true;
  if (device.is_cuda()) torch::cuda::synchronize(device.index());  // the step's work, not its launch
  const double now = seconds_since_process_start();
  if (now < 0.0) return;
  YF_LOG_INFO("train: first optimizer step " << format_fixed(now, 2) << " s after the process started (run built at "
                                             << format_fixed(built_at_, 2) << " s, first batch at "
                                             << format_fixed(first_batch_at_, 2) << " s, " << batches << " batch"
                                             << (batches == 1 ? "" : "es") << " into it)");
}

}  // namespace yoloflow::core
