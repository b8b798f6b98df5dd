#pragma once
// Who owns a run's loop. A pipeline's last stage decides: a stage whose component drives its
// own run (the trainer: epochs, validation, checkpoints, callbacks) gets that driver; any other
// sink gets the epoch loop (epoch_loop.h), which runs the graph epoch by epoch with the sink
// inside it. Either way the loop, its monitor events and its end belong to the driver; the
// command line parses, builds the driver and runs it.
#include <atomic>
#include <cstddef>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>

namespace yoloflow::core {

class GraphRunner;
class Registry;
struct Pipeline;

struct RunOptions {
  std::string run_dir;  // where outputs go ("" = none); the command has made and locked it
  std::string device;   // --device; the pipeline's "device" when empty
  const std::atomic<bool>* stop_flag = nullptr;  // set by a signal: finish the step, stop
  std::string resume_checkpoint;  // a checkpoint of this run to continue from ("" = from the start)
  // Called once, when the run has taken its first optimizer step: until then a start into an
  // earlier run's folder can still be undone (run_folder.h, keep_earlier_run).
  std::function<void()> on_first_step;
};

struct RunOutcome {
  std::size_t samples = 0;  // delivered to the sink over the run
  double seconds = 0;
  int epochs_done = 0;       // complete epochs of this process
  int epochs = 0;            // the run's epoch count as it ended (a time budget plans it); 0: the pipeline's
  bool interrupted = false;  // stopped before the end: by a signal, or by the run itself
  std::string stop_reason;   // why the run stopped itself (early stop, max_steps); "" for a signal
};

class RunDriver {
 public:
  virtual ~RunDriver();
  // Why there is nothing to run (a resumed run that already trained every epoch), "" when
  // there is: the command says so, writes nothing and succeeds.
  virtual std::string nothing_to_run() const { return ""; }
  // Whether a stopped run continues from what it saved (`train --resume`).
  virtual bool resumable() const = 0;
  // Runs every epoch (from where a resumed run stopped), printing progress to `out`.
  virtual RunOutcome run(std::ostream& out) = 0;
  // The data path, for the closing summary (what its sources reported, what was skipped).
  virtual GraphRunner& graph() = 0;
  // What the run leaves to say at its end (results, files), may be empty.
  virtual std::string summary() const = 0;
};

// A component's own driver: made instead of the component when its stage ends a pipeline.
using RunDriverFactory = std::unique_ptr<RunDriver> (*)(const Pipeline& pipeline, const Registry& registry,
                                                        const RunOptions& options);

// What the driver of `pipeline` settles in it before the run folder records it (registry.h,
// PipelinePreparer): the trainer measures an auto batch. Nothing for other drivers.
void prepare_run_pipeline(Pipeline& pipeline, const Registry& registry, const std::string& device);

// The driver of `pipeline` (see the top of this file). `pipeline` and `registry` must outlive it.
std::unique_ptr<RunDriver> make_run_driver(const Pipeline& pipeline, const Registry& registry, const RunOptions& options);

}  // namespace yoloflow::core
