#pragma once
// Monitor plugins: observe a run (console progress, files, GPU counters, TensorBoard).
// Called from one thread; must be quick, since training waits for them.
#include <cstdint>
#include <map>
#include <string>

#include "yoloflow/component.h"

namespace yoloflow {

struct RunEvent {
  std::string run_dir;
  std::string pipeline_name;
  int epochs = 0;
  std::int64_t steps_per_epoch = 0;
  std::string device;
};

// Values are named like results.csv columns where one exists ("train/box_loss", "lr/pg0").
struct StepEvent {
  int epoch = 0;
  std::int64_t step = 0;           // within the epoch, 0-based
  std::int64_t steps_in_epoch = 0;
  std::int64_t global_step = 0;
  double images_per_second = 0;
  double eta_seconds = 0;
  std::map<std::string, double> values;
};

struct EpochEvent {
  int epoch = 0;
  int epochs = 0;
  double seconds = 0;
  std::map<std::string, double> values;  // losses, metrics, learning rates, memory
  std::string summary;                   // one-line text, if the producer wrote one
};

// How a stage (usually the sink) reports progress. The host forwards each call to every
// monitor of the pipeline at once, on the caller's thread.
class RunReporter {
 public:
  virtual ~RunReporter() = default;
  virtual void step(const StepEvent& event) = 0;
  // Values (losses, metrics, learning rates) the host merges into the EpochEvent it sends
  // to the monitors when the epoch ends; later values under the same name win.
  virtual void epoch_values(const std::map<std::string, double>& values) = 0;
  // Ends the run after the current batch (early stopping, a step budget); the host drains
  // the graph, calls Sink::interrupted and prints `reason`.
  virtual void request_stop(const std::string& reason) = 0;
};

class YOLOFLOW_SDK_API Monitor : public Component {
 public:
  ~Monitor() override;
  virtual void on_run_start(const RunEvent& event);
  virtual void on_step(const StepEvent& event);
  virtual void on_epoch(const EpochEvent& event);
  virtual void on_run_end(const RunEvent& event);
  // Extra one-line text for the epoch summary (e.g. "GPU busy 94%, peak 5.1 GiB"), may be "".
  virtual std::string epoch_summary();
};

}  // namespace yoloflow
