#pragma once
// The CLI's side of a data-parallel run (`run`, and `train`): reads the launcher's
// environment (torchrun, srun) and installs it for the graph runner and the train sink;
// ranks other than 0 print only warnings and errors (rank 0 prints the progress and writes
// the outputs). At the end every rank says how it ended, so that no rank waits for a peer
// that is gone.
#include <string>

#include "runtime/dist/runtime.h"

namespace yoloflow::cli {

class DistributedRun {
 public:
  // Throws yoloflow::InvalidInput naming the variable when the environment is malformed.
  explicit DistributedRun(const std::string& log_level);
  // Without end(): the run is leaving through an exception, the other ranks are told so.
  ~DistributedRun();
  DistributedRun(const DistributedRun&) = delete;
  DistributedRun& operator=(const DistributedRun&) = delete;

  const core::dist::DistEnv& env() const { return env_; }
  bool is_main() const { return env_.is_main(); }
  // ok: a last barrier with the other ranks; otherwise they stop with `reason`.
  void end(bool ok, const std::string& reason = "");

 private:
  core::dist::DistEnv env_;
  bool ended_ = false;
};

}  // namespace yoloflow::cli
