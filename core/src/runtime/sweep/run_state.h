#pragma once
// What a sweep knows about one run's folder: its marker (sweep-status.json, written by the
// sweep after every child exit) and what the training left there (pipeline.json,
// results.csv, weights/last.pt). Everything the summary and a rerun decide is read from
// here, so `--summary-only` works on folders filled by Slurm jobs too.
#include <string>

namespace yoloflow::core {

struct RunMarker {
  std::string status;  // "running", "done", "failed", "interrupted"; empty: no marker
  std::string reason;  // failed: exit code / signal and the child's last `error:` line
  bool invalid = false;  // failed before starting: the resolved pipeline did not validate
};

struct RunState {
  RunMarker marker;
  int epochs = 0;           // planned, from the run's pipeline.json (0 when absent)
  int epochs_done = 0;      // rows of results.csv
  bool has_checkpoint = false;  // weights/last.pt and pipeline.json: `train --resume` can continue
  bool finished() const;    // marker says done, or results.csv holds every planned epoch
  // done, failed, interrupted (stopped with a checkpoint), running or pending (never started).
  std::string status() const;
};

RunState read_run_state(const std::string& dir);
void write_run_marker(const std::string& dir, const RunMarker& marker);  // atomic

}  // namespace yoloflow::core
