#include "cli/ultralytics_export.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "runtime/util/child_spawn.h"
#include "yoloflow/error.h"

namespace fs = std::filesystem;

namespace yoloflow::cli {

namespace {

constexpr const char* kScript = "yoloflow-to-ultralytics.py";
// What the child writes when exec fails, before its errno's text (the parent tells it from a
// script's own output by this prefix).
constexpr const char kExecFailed[] = "\x01yoloflow-exec-failed:";

}  // namespace

std::string find_ultralytics_script(std::vector<std::string>* looked_in) {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const fs::path dir = exe.parent_path();
  std::vector<fs::path> candidates = {dir / ".." / "share" / "yoloflow" / kScript, dir / kScript};
  // A build folder inside the checkout (build/bin/yoloflow, build-x/bin/yoloflow): scripts/ of the
  // first folder above it that has one.
  fs::path up = dir;
  for (int i = 0; i < 4 && up.has_parent_path() && up != up.parent_path(); ++i) {
    up = up.parent_path();
    candidates.push_back(up / "scripts" / kScript);
  }
  for (const auto& c : candidates) {
    const auto p = fs::weakly_canonical(c, ec);
    const auto shown = ec ? c : p;
    if (looked_in) looked_in->push_back(shown.parent_path().string());
    if (!ec && fs::is_regular_file(p, ec)) return p.string();
  }
  return "";
}

std::string python_interpreter() {
  const char* env = std::getenv("YOLOFLOW_PYTHON");
  return (env && *env) ? std::string(env) : std::string("python3");
}

PythonRun run_python(const std::string& python, const std::string& script, const std::vector<std::string>& args) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw Error(std::string("cannot start Python: pipe failed: ") + std::strerror(errno));
  }
  std::vector<std::string> argv = {python, script};
  argv.insert(argv.end(), args.begin(), args.end());
  core::ChildStart how;
  how.output_fd = fds[1];
  how.search_path = true;
  how.exec_failed = kExecFailed;
  how.exec_failed_reason = true;
  how.what = "Python";
  pid_t pid = -1;
  try {
    pid = core::spawn_child(argv, how);
  } catch (...) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw;
  }
  ::close(fds[1]);
  PythonRun run;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n > 0) {
      run.output.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (const auto at = run.output.find(kExecFailed); at != std::string::npos && run.exit_code == 127) {
    run.not_started = true;
    run.start_error = run.output.substr(at + sizeof kExecFailed - 1);
    run.output.clear();
  }
  return run;
}

}  // namespace yoloflow::cli
