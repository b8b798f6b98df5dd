#pragma once
// The process-wide distributed state: the host (CLI) installs the launcher's environment
// once per process, before building the graph; the graph runner shards each epoch with it
// and the built-in `train` sink connects the process group through it. Torch-free.
#include <string>

#include "runtime/dist/dist_env.h"

namespace yoloflow::core::dist {

// This process's place in the run; one process (world 1) until the host installs another.
const DistEnv& current_env();
void install_env(const DistEnv& env);

// Called by the host when the run ends, on every rank: when `ok`, a last barrier and the
// heartbeat stops; otherwise the other ranks are told that this one failed with `reason`.
// Then the process group (if the sink created one) is destroyed. Never throws.
void end_run(bool ok, const std::string& reason);

}  // namespace yoloflow::core::dist
