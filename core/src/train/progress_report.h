#pragma once
// What a training run shows while it runs: the progress line every `log_every` steps (epoch,
// step, losses, img/s, data wait, step time, ETA) and the same as a StepEvent for monitors.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "yoloflow/monitor.h"

namespace yoloflow::core {

struct ProgressSnapshot {
  int epoch = 0, epochs = 1;  // epoch 0-based
  std::int64_t step = 0, steps_in_epoch = 1, global_step = 0, images = 0;  // step: batches done this epoch
  double epoch_seconds = 0;
  std::array<double, 3> losses{};        // mean box, cls, dfl over the epoch so far
  double data_wait_ms = 0, step_ms = 0;  // host time per batch since the last line
  int size = 0;                          // multi-scale image size of the last batch (0 = none)
  std::vector<double> lrs;               // per parameter group
  double loss_scale = 1.0;
};

// "1:02:03" or "2:03".
std::string format_duration(double seconds);
double images_per_second(const ProgressSnapshot& s);
// Left in the run at this epoch's pace.
double eta_seconds(const ProgressSnapshot& s);
std::string progress_line(const ProgressSnapshot& s);
StepEvent progress_event(const ProgressSnapshot& s);

}  // namespace yoloflow::core
