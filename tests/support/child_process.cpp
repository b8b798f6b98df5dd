#include "support/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <thread>

#include "support/paths.h"
#include "support/run_cli.h"

extern char** environ;

namespace yoloflow::test {

ChildProcess::ChildProcess(const std::vector<std::string>& args, const ChildOptions& options)
    : log_path_(options.log_path) {
  // Everything exec needs is built before fork: the test process has threads.
  const std::string exe = cli();
  std::vector<std::string> argv_s{exe};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    if (options.env.count(kv.substr(0, kv.find('='))) == 0) env_s.push_back(kv);
  }
  for (const auto& [k, v] : options.env) env_s.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);

  int fds[2] = {-1, -1};
  int out = -1;
  if (log_path_.empty()) {
    if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
    out = fds[1];
  } else {
    out = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0) throw std::runtime_error("cannot open " + log_path_);
  }
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    dup2(out, 1);
    dup2(out, 2);
    if (fds[0] >= 0) close(fds[0]);
    execve(exe.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  close(out);
  fd_ = fds[0];
}

ChildProcess::~ChildProcess() {
  if (!exited_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  if (fd_ >= 0) close(fd_);
}

void ChildProcess::read_some(int poll_ms) {
  if (!log_path_.empty()) {  // file mode: the whole (small) log, re-read
    std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
    output_ = read_file(log_path_);
    return;
  }
  pollfd p{fd_, POLLIN, 0};
  if (poll(&p, 1, poll_ms) > 0) {
    char buf[4096];
    const ssize_t n = read(fd_, buf, sizeof buf);
    if (n > 0) output_.append(buf, static_cast<std::size_t>(n));
  }
}

bool ChildProcess::wait_for_output(const std::string& text, int timeout_ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (output_.find(text) == std::string::npos) {
    if (std::chrono::steady_clock::now() >= end) return false;
    int status = 0;
    read_some(50);
    if (!exited_ && waitpid(pid_, &status, WNOHANG) == pid_) {
      exited_ = true;
      status_ = status;
      for (int i = 0; i < 20; ++i) read_some(10);
      return output_.find(text) != std::string::npos;
    }
  }
  return true;
}

void ChildProcess::signal(int sig) {
  if (!exited_) kill(pid_, sig);
}

int ChildProcess::wait(int timeout_ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!exited_) {
    int status = 0;
    const pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      exited_ = true;
      status_ = status;
      break;
    }
    if (std::chrono::steady_clock::now() >= end) return -1;
    read_some(50);
  }
  for (int i = 0; i < 20; ++i) read_some(10);
  if (WIFEXITED(status_)) return WEXITSTATUS(status_);
  if (WIFSIGNALED(status_)) return 128 + WTERMSIG(status_);
  return -1;
}

}  // namespace yoloflow::test
