#pragma once
// What a training run shows while it runs: the progress line every `log_every` steps (epoch,
// step, losses, img/s, data wait, step time, ETA) and the same as a StepEvent for monitors.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "training/components/named_losses.h"
#include "yoloflow/monitor.h"

namespace yoloflow::core {

struct ProgressSnapshot {
  int epoch = 0, epochs = 1;  // epoch 0-based
  std::int64_t step = 0, steps_in_epoch = 1, global_step = 0, images = 0;  // step: batches done this epoch
  double epoch_seconds = 0;
  NamedLosses losses;                    // the loss's mean components over the epoch so far
  double data_wait_ms = 0, step_ms = 0;  // host time per batch since the last line
  int size = 0;                          // the last batch's image size (its longer side; multi-scale's size)
  std::int64_t instances = -1;           // the last batch's labelled instances (-1: not known)
  std::vector<double> lrs;               // per parameter group
  double loss_scale = 1.0;
};

// "1:02:03" or "2:03".
std::string format_duration(double seconds);
double images_per_second(const ProgressSnapshot& s);
// Left in the run at this epoch's pace.
double eta_seconds(const ProgressSnapshot& s);
std::string progress_line(const ProgressSnapshot& s);
// `width` cells, the first done/total of them full: "━━━━━━──────".
std::string progress_bar(std::int64_t done, std::int64_t total, int width);
// The terminal's status line during an epoch (a bar, the step, the losses as last logged, the
// last batch's instances and size, speed and ETA); made without reading the device.
std::string status_line(const ProgressSnapshot& s);
StepEvent progress_event(const ProgressSnapshot& s);

// The host's seconds per batch between two progress lines: waiting for the graph vs in the step.
class ProgressWindow {
 public:
  void add(double data_wait_seconds, double step_seconds) {
    data_wait_ += data_wait_seconds;
    step_time_ += step_seconds;
  }
  // A window starting after batch `step` (a new or resumed epoch).
  void restart(std::int64_t step) { last_step_ = step; }
  // Completes `s` with this window's per-batch times (s.step: batches done), logs its line,
  // sends it to `reporter` (may be null) and starts the next window.
  void report(ProgressSnapshot& s, RunReporter* reporter);

 private:
  double data_wait_ = 0.0, step_time_ = 0.0;
  std::int64_t last_step_ = 0;
};

}  // namespace yoloflow::core
