#pragma once
// A stop the user asked for with SIGINT or SIGTERM, seen by every library of the process: the
// host's signal handlers raise it, and a plugin's long phase before the run (listing a dataset,
// scanning its labels, filling a cache) polls it, so the first signal ends the command at once
// rather than after that phase.
#include <string>

#include "yoloflow/export.h"

namespace yoloflow {

// Raised by a signal handler: async-signal-safe (a lock-free atomic store).
YOLOFLOW_SDK_API void request_stop(int signal) noexcept;
// Lowered when a command starts to watch for signals.
YOLOFLOW_SDK_API void clear_stop_request() noexcept;
YOLOFLOW_SDK_API bool stop_requested() noexcept;

// When a stop was asked for, throws Error("interrupted by SIGTERM while <doing>; nothing was
// run", kExitInterrupted): the command ends with exit code 130 and nothing of it is kept.
YOLOFLOW_SDK_API void throw_if_stop_requested(const std::string& doing);

}  // namespace yoloflow
