#pragma once
// A `yoloflow` CLI child process a test can watch and signal (SIGINT, SIGKILL mid-run).
#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace yoloflow::test {

struct ChildOptions {
  std::map<std::string, std::string> env;  // set or replaced in the child's environment
  // Non-empty: stdout and stderr go to this file instead of a pipe (children that must run
  // side by side while the test waits on one of them, e.g. two ranks, never block on a full
  // pipe); output() then holds the file's content as last read.
  std::string log_path;
};

class ChildProcess {
 public:
  // Starts the built CLI with `args` (no shell); stdout and stderr go to one pipe.
  explicit ChildProcess(const std::vector<std::string>& args) : ChildProcess(args, ChildOptions{}) {}
  ChildProcess(const std::vector<std::string>& args, const ChildOptions& options);
  ~ChildProcess();  // kills the child if it still runs
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Reads output until `text` appears (true) or `timeout_ms` passes (false).
  bool wait_for_output(const std::string& text, int timeout_ms);
  void signal(int sig);
  // Waits for the exit; returns the exit code, 128+signal when killed, -1 on timeout.
  int wait(int timeout_ms);
  const std::string& output() const { return output_; }

 private:
  void read_some(int poll_ms);
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string log_path_;
  bool exited_ = false;
  int status_ = 0;
  std::string output_;
};

}  // namespace yoloflow::test
