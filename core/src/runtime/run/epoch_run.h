#pragma once
// The skeleton every run driver shares, start to end: the monitors' run start, the opening
// line, the epochs from the first one while the run's control (graph/run_control.h) neither
// stops nor reaches its planned count, each epoch reported (epoch_loop.h's report_epoch), then
// the monitors' run end and the outcome. What one epoch is belongs to the driver (the epoch
// loop runs the graph; the trainer adds validation, checkpoints and results).
#include <functional>
#include <iosfwd>
#include <string>

#include "runtime/graph/graph_runner.h"
#include "runtime/run/run_driver.h"

namespace yoloflow::core {

struct EpochRunSteps {
  bool resuming = false;    // the opening line says "resuming"
  std::string plan_note;    // after the epoch count in the opening line (a time budget)
  int first_epoch = 0;
  // After the opening line, before the first epoch.
  std::function<void()> before;
  // Runs one epoch; its statistics are reported. An interrupted epoch ends the run.
  std::function<EpochStats(int epoch)> epoch;
  // After the last epoch (however the run ended), before the monitors' run end.
  std::function<void()> after;
};

RunOutcome run_epochs(GraphRunner& runner, const RunOptions& options, const EpochRunSteps& steps, std::ostream& out);

}  // namespace yoloflow::core
