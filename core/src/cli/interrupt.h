#pragma once
// SIGINT/SIGTERM for commands that go through a list of work (predict, val): the first signal
// says at once what will happen and lets the command finish the item in hand and write what
// it has; a second one stops at once. For the scope of one command.
#include <atomic>
#include <string>

#include "runtime/util/stop_signal_scope.h"

namespace yoloflow::cli {

class InterruptScope {
 public:
  // `first_line`: what the first signal prints, e.g. "interrupt: stopping after this image".
  // `second_line`: what a second prints before the process exits with code 130.
  InterruptScope(const std::string& first_line, const std::string& second_line);
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
