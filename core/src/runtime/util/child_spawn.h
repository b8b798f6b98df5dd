#pragma once
// Child processes as the host starts them (a sweep's runs, the Ultralytics export's Python):
// no shell, stdin from /dev/null, stdout and stderr into one descriptor, and SIGTERM when the
// host dies (a child whose parent is already gone never starts its program).
#include <sys/types.h>

#include <string>
#include <vector>

namespace yoloflow::core {

struct ChildStart {
  int output_fd = -1;              // the child's stdout and stderr; the caller keeps and closes it
  bool own_process_group = false;  // a terminal's Ctrl-C then reaches the host only
  bool search_path = false;        // argv[0] looked up on PATH (execvp) instead of taken as a path
  std::string exec_failed;         // written to the child's stderr when its program cannot start
  bool exec_failed_reason = false;  // ... followed by the reason (strerror of exec's errno)
  std::string what;                // "Python", "a run": "cannot start <what>: fork failed: ..."
};

// Starts argv[0] with `argv`; returns its pid. Throws yoloflow::Error when fork fails.
pid_t spawn_child(const std::vector<std::string>& argv, const ChildStart& how);

}  // namespace yoloflow::core
