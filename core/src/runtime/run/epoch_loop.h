#pragma once
// The run of a pipeline whose sink is a plain component (a throughput meter, the validate and
// predict sinks): every epoch through the graph, the sink inside it, each epoch reported to the
// monitors and printed.
#include <memory>

#include "runtime/graph/graph_runner.h"
#include "runtime/run/run_driver.h"

namespace yoloflow::core {

class EpochLoop final : public RunDriver {
 public:
  EpochLoop(const Pipeline& pipeline, const Registry& registry, const RunOptions& options);
  bool resumable() const override { return false; }
  RunOutcome run(std::ostream& out) override;
  GraphRunner& graph() override { return *runner_; }
  std::string summary() const override { return runner_->sink().summary(); }

 private:
  const Pipeline& pipeline_;
  RunOptions options_;
  RunControl control_;  // the run's, obeyed by the graph
  std::unique_ptr<GraphRunner> runner_;
};

// What every driver reports of a finished (or stopped) epoch: the printed line with its skipped
// samples (the first 20), the monitors' on_epoch event (with `values` the driver adds) and
// their summary lines. Throws Error when no sample of the epoch could be loaded: an epoch of
// nothing is not a success.
void report_epoch(GraphRunner& runner, const EpochStats& stats, int epochs, const std::map<std::string, double>& values,
                  std::ostream& out);

// The monitors' run events, with what they are told of the run.
RunEvent run_event(const Pipeline& pipeline, const RunOptions& options);

}  // namespace yoloflow::core
