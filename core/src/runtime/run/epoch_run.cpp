#include "runtime/run/epoch_run.h"

#include <ostream>

#include "runtime/run/epoch_loop.h"

namespace yoloflow::core {

RunOutcome run_epochs(GraphRunner& runner, const RunOptions& options, const EpochRunSteps& steps, std::ostream& out) {
  const Pipeline& pipeline = runner.pipeline();
  RunControl& control = runner.control();
  const RunEvent event = run_event(pipeline, options);
  for (auto& m : runner.monitors()) m->on_run_start(event);
  const int epochs = control.epochs();
  out << (steps.resuming ? "resuming '" : "running '") << pipeline.name << "': " << epochs << " epoch"
      << (epochs == 1 ? "" : "s") << steps.plan_note << ", " << runner.source().size() << " samples, "
      << runner.workers() << " worker" << (runner.workers() == 1 ? "" : "s") << (pipeline.ordered ? ", ordered" : "")
      << std::endl;
  if (steps.before) steps.before();
  RunOutcome outcome;
  // The planned count may change after each epoch (a time budget's plan).
  for (int epoch = steps.first_epoch; epoch < control.epochs() && !control.stop_requested(); ++epoch) {
    const EpochStats stats = steps.epoch(epoch);
    outcome.samples += stats.samples;
    outcome.seconds += stats.seconds;
    report_epoch(runner, stats, control.epochs(), {}, out);
    if (stats.interrupted) break;
    ++outcome.epochs_done;
  }
  if (steps.after) steps.after();
  outcome.epochs = control.epochs();
  outcome.interrupted = control.stop_requested();
  outcome.stop_reason = control.stop_reason();
  for (auto& m : runner.monitors()) m->on_run_end(event);
  return outcome;
}

}  // namespace yoloflow::core
