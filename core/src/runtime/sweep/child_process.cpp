#include "runtime/sweep/child_process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/util/child_spawn.h"
#include "yoloflow/error.h"

namespace yoloflow::core {

pid_t spawn_logged(const std::vector<std::string>& argv, const std::string& log_path) {
  const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(log_path + ": cannot open the run log: " + std::strerror(errno));
  ChildStart how;
  how.output_fd = fd;
  how.own_process_group = true;
  how.exec_failed = "error: cannot execute the yoloflow binary\n";
  how.what = "a run";
  pid_t pid = -1;
  try {
    pid = spawn_child(argv, how);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return pid;
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = ::strsignal(sig);
    return "killed by signal " + std::to_string(sig) + (name ? std::string(" (") + name + ")" : std::string());
  }
  return "ended with wait status " + std::to_string(status);
}

}  // namespace yoloflow::core
