#pragma once
// SIGINT/SIGTERM for a command (train and run, predict, val): the first signal says at once
// what will happen and lets the command finish the item in hand (a batch, a step and its
// checkpoint, an image) and write what it has; a second one stops at once, except in a host's
// process (the Python module), which goes on (command_observer.h). For the scope of one command.
#include <atomic>
#include <string>

#include "runtime/util/stop_signal_scope.h"

namespace yoloflow::cli {

// What the signals print.
struct InterruptLines {
  std::string first;   // the first signal, e.g. "interrupt: stopping after this image"
  std::string second;  // a second, before the process exits with code 130
  // A second in a host's process, which goes on.
  std::string again = "interrupt: already stopping after the item in hand";
  // Set: a second signal while this file does not exist prints `second_without_kept` instead
  // (a training run's last.pt: whether a resume is possible).
  std::string kept_file;
  std::string second_without_kept;
};

class InterruptScope {
 public:
  explicit InterruptScope(const InterruptLines& lines);
  InterruptScope(const std::string& first_line, const std::string& second_line)
      : InterruptScope(InterruptLines{first_line, second_line}) {}
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

  // True once a signal arrived.
  static bool requested();
  // The flag itself, for code that polls an atomic (the graph runner's stop flag).
  static const std::atomic<bool>* flag();
  // "SIGINT" or "SIGTERM".
  static const char* signal_name();

 private:
  core::StopSignalScope signals_;
};

}  // namespace yoloflow::cli
