#pragma once
// Why a GPU stayed below its target utilisation over an epoch, in one line with what to
// change, from what the trainer reported: the time its steps waited for a batch against the
// time they took ("time/data_wait", "time/step", seconds per batch, in its step reports), and
// the time the epoch spent outside its batches (the host's "time/first_batch" and
// "time/end_of_epoch" epoch values: with ~2 s epochs a checkpoint write alone idles the GPU
// for a quarter of the epoch).
#include <cmath>
#include <cstdio>
#include <string>

namespace yoloflow::gpu_monitor {

class StepTimes {
 public:
  // One step report's values (windows of log_every steps); missing ones are NaN.
  void add(double data_wait_s, double step_s) {
    if (std::isnan(data_wait_s) || std::isnan(step_s)) return;
    wait_ += data_wait_s;
    step_ += step_s;
    ++reports_;
  }
  bool empty() const { return reports_ == 0; }
  // Share of the time between batches spent waiting for the next one.
  double wait_share() const { return wait_ + step_ > 0 ? wait_ / (wait_ + step_) : 0.0; }
  void clear() { *this = StepTimes{}; }

 private:
  double wait_ = 0, step_ = 0;
  long reports_ = 0;
};

// An epoch's seconds, and of them those outside its batches: until the first batch reached
// the trainer (the pipeline filling) and after the last (validation, results, checkpoints).
// With the step captured as a CUDA graph (the trainer's "step/eager" and "step/replayed" epoch
// values): how many of the epoch's steps ran eagerly (warm-up, the capture) and how many replayed.
struct EpochTimes {
  double seconds = NAN, first_batch = NAN, end = NAN;
  double eager_steps = NAN, replayed_steps = NAN;
  bool captured() const { return replayed_steps > 0; }
  bool capture_in_epoch() const { return captured() && eager_steps > 0; }
  bool known() const { return seconds > 0 && !std::isnan(first_batch) && !std::isnan(end); }
  double outside_share() const { return known() ? (first_batch + end) / seconds : 0.0; }
};

// "" when `busy_percent` reaches `target_percent` or nothing is known.
inline std::string explain_low_utilisation(double busy_percent, double target_percent, const StepTimes& times,
                                           const EpochTimes& epoch = {}) {
  if (std::isnan(busy_percent) || busy_percent >= target_percent || (times.empty() && !epoch.known())) return "";
  char text[512];
  const double share = 100.0 * times.wait_share();
  const double outside = 100.0 * epoch.outside_share();
  // What to do about the step itself: capture it, unless it already is.
  const char* step_advice = epoch.captured() ? "the step is already a CUDA graph: a larger `batch` (the nominal batch stays)"
                                             : "`cuda_graph: true`, a larger `batch` (the nominal batch stays)";
  if (epoch.capture_in_epoch()) {
    // The first epoch of a captured run: cuDNN's first calls, the warm-up steps and the capture
    // itself, not the step's speed.
    std::snprintf(text, sizeof text,
                  "GPU busy %.0f%% (< %.0f%%): this epoch includes the training step's warm-up and CUDA graph capture "
                  "(%.0f eager steps, then %.0f replayed); the epochs after it show the captured step's speed",
                  busy_percent, target_percent, epoch.eager_steps, epoch.replayed_steps);
  } else if (outside >= 10.0 && outside >= share) {
    std::snprintf(text, sizeof text,
                  "GPU busy %.0f%% (< %.0f%%): %.0f%% of the epoch passed outside its batches (%.2f s filling the "
                  "pipeline, %.2f s at the end: validation, results, checkpoints); validate less often (`val_every`), "
                  "keep `save_async` on, or make epochs longer",
                  busy_percent, target_percent, outside, epoch.first_batch, epoch.end);
  } else if (times.empty()) {
    return "";
  } else if (share >= 20.0) {
    std::snprintf(text, sizeof text,
                  "GPU busy %.0f%% (< %.0f%%): the training step waited for data %.0f%% of the time; give the "
                  "graph more `workers` (and `max_in_flight` room for them), use `cache: ram` on the source, or "
                  "lighten the augmentation",
                  busy_percent, target_percent, share);
  } else if (share >= 5.0) {
    // Measured on the H200 with the step captured as a CUDA graph: 23 ms steps, 4-5 ms of
    // data wait each, GPU 55-75% busy. Both halves need saying.
    std::snprintf(text, sizeof text,
                  "GPU busy %.0f%% (< %.0f%%): the training step waited for data %.0f%% of the time and the step "
                  "itself leaves the GPU idle; for the data: more graph `workers` and `max_in_flight`, `cache: ram`, `mosaic_perspective` "
                  "or lighter augmentation; for the step: %s",
                  busy_percent, target_percent, share, step_advice);
  } else {
    std::snprintf(text, sizeof text,
                  "GPU busy %.0f%% (< %.0f%%) with batches ready (data wait %.0f%% of the time): the step is "
                  "host-bound (kernel launches, host syncs); for the step: %s, amp_bf16 and channels_last, fewer "
                  "graph `workers` if steps jump; `profile_every` shows which phase",
                  busy_percent, target_percent, share, step_advice);
  }
  return text;
}

}  // namespace yoloflow::gpu_monitor
