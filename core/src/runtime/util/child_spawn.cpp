#include "runtime/util/child_spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "yoloflow/error.h"

namespace yoloflow::core {

pid_t spawn_child(const std::vector<std::string>& argv, const ChildStart& how) {
  // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw Error("cannot start " + how.what + ": fork failed: " + std::strerror(errno));
  if (pid == 0) {
    if (how.own_process_group) ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);  // the host died before prctl took effect
    const int null_in = ::open("/dev/null", O_RDONLY);
    if (null_in >= 0) ::dup2(null_in, 0);
    ::dup2(how.output_fd, 1);
    ::dup2(how.output_fd, 2);
    if (how.search_path) {
      ::execvp(cargv[0], cargv.data());
    } else {
      ::execv(cargv[0], cargv.data());
    }
    const int err = errno;
    (void)!::write(2, how.exec_failed.data(), how.exec_failed.size());
    if (how.exec_failed_reason) {
      const char* text = ::strerror(err);  // not async-signal-safe in theory; the child exits next
      (void)!::write(2, text, std::strlen(text));
    }
    ::_exit(127);
  }
  return pid;
}

}  // namespace yoloflow::core
