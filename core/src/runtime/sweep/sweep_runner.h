#pragma once
// Runs a sweep's runs as child processes (`yoloflow train ...`), a few at a time, and keeps
// the summary current. Resumable: finished runs are skipped, interrupted ones continue with
// `train --resume`, failed ones are retried on request. SIGINT/SIGTERM are forwarded to the
// running children, which save their state; the sweep then writes the summary and returns.
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "runtime/sweep/sweep_plan.h"

namespace yoloflow::core {

struct SweepOptions {
  std::string exe;                       // the yoloflow binary the children run
  std::vector<std::string> global_args;  // placed before `train` (--plugin-path, --log-level)
  std::vector<std::string> devices;      // one concurrent run per device ("cuda:0"), each child --device D
  int jobs = 1;                          // without devices: concurrent runs on the pipeline's device
  bool retry_failed = false;
  std::string out_dir;
};

// Checks a run's resolved pipeline (base + overrides); returns "" when valid, else the
// problems, one a line.
using RunValidator = std::function<std::string(const SweepRun&)>;

struct SweepOutcome {
  int done = 0, failed = 0, interrupted = 0, pending = 0;
  bool stopped = false;  // a signal stopped the sweep
};

// The `train` arguments of a fresh run and of a resumed one (no binary, no global args).
std::vector<std::string> train_arguments(const SweepPlan& plan, const SweepRun& run, const std::string& dir,
                                         const std::string& device);
std::vector<std::string> resume_arguments(const std::string& dir, const std::string& device);

SweepOutcome run_sweep(const SweepPlan& plan, const SweepOptions& options, const RunValidator& validate,
                       std::ostream& out);

}  // namespace yoloflow::core
