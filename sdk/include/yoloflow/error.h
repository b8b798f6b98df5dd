#pragma once
// Errors that cross the plugin boundary, and what the CLI's exit codes mean.
#include <stdexcept>
#include <string>

#include "yoloflow/export.h"

namespace yoloflow {

// Exit codes of the `yoloflow` CLI. Stable: scripts and sweeps rely on them.
enum ExitCode : int {
  kExitOk = 0,           // finished (a training run stopped by SIGINT/SIGTERM after saving, too)
  kExitFailure = 1,      // a run started and failed (a stage threw, training diverged, I/O error)
  kExitInvalid = 2,      // bad input found before anything ran: usage, JSON, pipeline validation
  kExitPluginError = 3,  // a plugin the command needs could not be loaded
  kExitInterrupted = 130 // a non-resumable run stopped by SIGINT/SIGTERM
};

// Base class of every error yoloflow raises on purpose. `what()` is a complete,
// user-facing sentence; no stack trace is needed to act on it.
class YOLOFLOW_SDK_API Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, int exit_code = kExitFailure);
  ~Error() override;
  int exit_code() const noexcept { return exit_code_; }

 private:
  int exit_code_;
};

// Invalid user input (parameters, data paths, files): exit code 2 when it stops a command.
class YOLOFLOW_SDK_API InvalidInput : public Error {
 public:
  explicit InvalidInput(const std::string& message);
  ~InvalidInput() override;
};

// "a, b, c": the keys of a map, for an error that names what there is beside what is missing;
// `none` when it is empty.
template <class Map>
std::string key_list(const Map& map, const std::string& none) {
  std::string out;
  for (const auto& entry : map) out += (out.empty() ? "" : ", ") + entry.first;
  return out.empty() ? none : out;
}

}  // namespace yoloflow
