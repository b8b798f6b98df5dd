#pragma once
// A training run's time budget (the train sink's `time`, Ultralytics' time=H): hours of training
// in this process that take the place of a fixed epoch count. After each epoch the run is
// planned again at the pace so far, so that the learning-rate schedule ends when the budget
// does; within an epoch the budget is checked after every batch, and a spent budget ends the
// epoch there (it is still validated and checkpointed) and then the run. Like max_steps it
// counts this process only: a resumed run gets the budget afresh.
#include <chrono>
#include <string>

namespace yoloflow::core {

// The epochs that fit in `budget_seconds` when `epochs_done` epochs took `elapsed_seconds`:
// ceil(budget / mean epoch time), and never fewer than the epochs already done (a budget
// overrun ends the run after the epoch in hand, it does not undo epochs). Large enough to be
// no limit when nothing has been timed yet (elapsed 0).
int epochs_within_budget(double budget_seconds, double elapsed_seconds, int epochs_done);

class TimeBudget {
 public:
  using Clock = std::chrono::steady_clock;

  explicit TimeBudget(double hours = 0.0) : seconds_(hours * 3600.0) {}

  bool on() const { return seconds_ > 0.0; }
  double seconds() const { return seconds_; }
  // Training begins (in this process): the budget counts from here.
  void start() { start_ = Clock::now(); }
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  bool spent() const { return on() && elapsed() > seconds_; }

  // The run's epoch count once epoch `epoch` (0-based) has trained, `first_epoch` the one this
  // process began with and `epochs` the count so far; `end_seconds` is what the epoch's end
  // (validation, checkpoint) is expected to add, the previous epoch's. Logs the new count when
  // it changes.
  int plan(int epoch, int first_epoch, int epochs, double end_seconds) const;

  // The budget as the log lines and the run's stop reason give it: "0.5 h (1800 s)".
  std::string text() const;
  // Why the run stops: the budget spent, or too little of it left for another epoch, and the
  // training time so far.
  std::string stop_reason() const;

 private:
  double seconds_;
  Clock::time_point start_ = Clock::now();
  mutable bool planned_before_ = false;  // a plan has changed the count: later ones log at debug level
};

}  // namespace yoloflow::core
