#pragma once
// Child processes of a sweep: one `yoloflow train` each, its stdout and stderr appended to a
// log file. A child runs in its own process group (a terminal's Ctrl-C reaches the sweep
// only, which forwards it once) and gets SIGTERM if the sweep dies, so it saves and stops.
#include <sys/types.h>

#include <string>
#include <vector>

namespace yoloflow::core {

// Starts argv[0] with `argv` (no shell), output appended to `log_path`. Throws
// yoloflow::Error when the log cannot be opened or fork fails.
pid_t spawn_logged(const std::vector<std::string>& argv, const std::string& log_path);

// "exit code 1", "killed by signal 11 (Segmentation fault)".
std::string describe_wait_status(int status);

}  // namespace yoloflow::core
