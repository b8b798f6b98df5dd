#pragma once
// `yoloflow sweep SWEEP.json --emit slurm`: a Slurm job-array script with one array task per
// run. Each task trains its run into the sweep's folder (resuming when the folder already
// holds a checkpoint, so a requeued task continues); `yoloflow sweep SWEEP.json
// --summary-only` afterwards collects the folders into the summary.
#include <string>

#include "runtime/sweep/sweep_plan.h"

namespace yoloflow::core {

struct SlurmOptions {
  std::string exe = "yoloflow";  // the binary the tasks call
  std::string out_dir;           // the sweep's folder (absolute is safest)
  std::string sweep_file;        // for the summary note
};

std::string slurm_array_script(const SweepPlan& plan, const SlurmOptions& options);

// `text` as one single-quoted shell word.
std::string shell_quote(const std::string& text);

}  // namespace yoloflow::core
