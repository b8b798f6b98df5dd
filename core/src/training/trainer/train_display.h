#pragma once
// What a training run shows of its batches while it runs: the progress line every `log_every`
// batches (and to the monitors as a step event), the terminal's bar after every batch, and once
// the line saying how long the user waited for the first optimizer step and where the time went
// (building the run, waiting for the first batch, the first steps: cuDNN's algorithm search, a
// captured step's warm-up).
#include <chrono>
#include <cstdint>
#include <vector>

#include <c10/core/Device.h>

#include "training/components/named_losses.h"
#include "training/step/train_state.h"
#include "training/trainer/progress_report.h"
#include "yoloflow/monitor.h"
#include "yoloflow/optimizer.h"

namespace yoloflow::core {

// Where the run stands for a line: the state and the epoch's plan.
struct DisplayedEpoch {
  const TrainState& state;
  int epochs = 1;
  std::int64_t batches_per_epoch = 1;
  double epoch_seconds = 0.0;
};

class TrainDisplay {
 public:
  // The run is built (seconds since the process started).
  void built();
  // A batch reached the trainer; `size` its image size as trained, `instances` its labelled
  // instances (-1: not known).
  void batch_arrived(int size, std::int64_t instances);
  // A (new or resumed) epoch starts after batch `step`.
  void epoch_started(std::int64_t step) { window_.restart(step); }
  // The host's seconds of a batch: waiting for the graph, then in the step.
  void batch_timed(double data_wait, double step_seconds) { window_.add(data_wait, step_seconds); }

  // The progress line (logged, and to `reporter`, which may be null).
  void log_progress(const DisplayedEpoch& at, const std::vector<ParamGroup>& groups, double loss_scale,
                    RunReporter* reporter);
  // On a terminal, the epoch's bar (at most ten times a second, and at the epoch's last batch):
  // host counts and the last progress line's losses only, so that it never waits for the device.
  void show_status(const DisplayedEpoch& at);

  bool first_step_reported() const { return first_step_reported_; }
  // The first optimizer step is done, `batches` batches into this process: logs the timeline
  // (after the device's work, not its launch).
  void report_first_step(const c10::Device& device, std::int64_t batches);

 private:
  ProgressWindow window_;
  NamedLosses shown_losses_;  // the last progress line's, for the bar
  int size_ = 0;
  std::int64_t instances_ = -1;
  std::chrono::steady_clock::time_point status_drawn_{};
  // The startup timeline, in seconds since the process started.
  double built_at_ = -1.0, first_batch_at_ = -1.0;
  bool first_step_reported_ = false;
};

}  // namespace yoloflow::core
