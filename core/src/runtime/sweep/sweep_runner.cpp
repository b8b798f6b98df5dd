#include "runtime/sweep/sweep_runner.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <thread>

#include "runtime/sweep/child_process.h"
#include "runtime/sweep/run_state.h"
#include "runtime/sweep/sweep_summary.h"
#include "runtime/util/stop_signal_scope.h"

namespace yoloflow::core {
namespace {

namespace fs = std::filesystem;

std::atomic<int> g_signals{0};
std::atomic<int> g_last_signal{0};

extern "C" void on_sweep_signal(int sig) {
  g_last_signal.store(sig);
  g_signals.fetch_add(1);
}

enum class Action { Skip, Fresh, Resume };

struct Job {
  std::size_t index = 0;  // into plan.runs
  Action action = Action::Fresh;
};

struct Running {
  Job job;
  pid_t pid = -1;
  std::size_t slot = 0;
  std::chrono::steady_clock::time_point start;
  std::size_t log_offset = 0;  // where this attempt's output starts in log.txt
};

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& a : v) s += (s.empty() ? "" : " ") + a;
  return s;
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

std::size_t file_size_or_zero(const std::string& path) {
  std::error_code ec;
  const auto n = fs::file_size(path, ec);
  return ec ? 0 : static_cast<std::size_t>(n);
}

std::string read_from(const std::string& path, std::size_t offset) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(static_cast<std::streamoff>(offset));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void append_line(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::app);
  out << text << "\n";
}

// The value of the last line of `log` starting with `prefix` (prefix excluded), or "".
std::string last_line_starting(const std::string& log, const std::string& prefix) {
  std::istringstream in(log);
  std::string line, last;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) last = line.substr(prefix.size());
  }
  return last;
}

}  // namespace

std::vector<std::string> train_arguments(const SweepPlan& plan, const SweepRun& run, const std::string& dir,
                                         const std::string& device) {
  std::vector<std::string> a{"train", plan.base};
  a.insert(a.end(), run.overrides.begin(), run.overrides.end());
  // The sweep owns the folder: a run that failed before it could save starts there afresh.
  a.insert(a.end(), {"--run-dir", dir, "--exist-ok"});
  if (!device.empty()) a.insert(a.end(), {"--device", device});
  return a;
}

std::vector<std::string> resume_arguments(const std::string& dir, const std::string& device) {
  // No overrides: the saved pipeline.json has them applied and its paths resolved (a relative
  // path given again would resolve against the run folder).
  std::vector<std::string> a{"train", "--resume", dir};
  if (!device.empty()) a.insert(a.end(), {"--device", device});
  return a;
}

SweepOutcome run_sweep(const SweepPlan& plan, const SweepOptions& options, const RunValidator& validate,
                       std::ostream& out) {
  const std::size_t n = plan.runs.size();
  auto dir_of = [&](std::size_t i) { return (fs::path(options.out_dir) / plan.runs[i].folder).string(); };
  auto tag = [&](std::size_t i) { return "[" + std::to_string(i + 1) + "/" + std::to_string(n) + "] " + plan.runs[i].name; };
  fs::create_directories(options.out_dir);

  // Every run's resolved pipeline is checked before anything starts.
  std::vector<Job> queue;
  int invalid = 0, finished = 0, failed_before = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string dir = dir_of(i);
    const std::string problems = validate ? validate(plan.runs[i]) : std::string();
    if (!problems.empty()) {
      ++invalid;
      out << tag(i) << ": invalid, not run:\n" << problems << (problems.back() == '\n' ? "" : "\n");
      fs::create_directories(dir);
      append_line(dir + "/log.txt", "=== sweep: the resolved pipeline is invalid, the run was not started\n" + problems);
      write_run_marker(dir, {"failed", "invalid pipeline: " + first_line(problems), true});
      continue;
    }
    const RunState state = read_run_state(dir);
    if (state.finished()) {
      ++finished;
      out << tag(i) << ": done already, skipped" << std::endl;
      continue;
    }
    const bool failed = state.marker.status == "failed" && !state.marker.invalid;
    if (failed && !options.retry_failed) {
      ++failed_before;
      out << tag(i) << ": failed before (" << state.marker.reason << "), skipped; --retry-failed runs it again"
          << std::endl;
      continue;
    }
    queue.push_back({i, state.has_checkpoint ? Action::Resume : Action::Fresh});
  }
  out << "sweep '" << plan.name << "': " << n << " run" << (n == 1 ? "" : "s") << ", " << queue.size()
      << " to run, " << finished << " done, " << failed_before + invalid << " failed; folders in "
      << options.out_dir << std::endl;
  write_summary(plan, options.out_dir);

  const std::vector<std::string> slot_devices =
      options.devices.empty() ? std::vector<std::string>(static_cast<std::size_t>(std::max(options.jobs, 1)), "")
                              : options.devices;
  std::vector<bool> busy(slot_devices.size(), false);
  std::vector<Running> running;
  std::size_t next = 0;
  int forwarded = 0;
  // Not reset on delivery: every further signal is forwarded again (a training stops hard on
  // its second one).
  g_signals.store(0);
  StopSignalScope signals(on_sweep_signal, /*once=*/false);

  for (;;) {
    const int received = g_signals.load();
    const bool stopping = received > 0;
    if ((stopping || next >= queue.size()) && running.empty()) break;
    if (received > forwarded) {
      const int sig = g_last_signal.load();
      if (forwarded == 0) {
        out << "stopping: " << (sig == SIGTERM ? "SIGTERM" : "SIGINT") << " forwarded to " << running.size()
            << " running training" << (running.size() == 1 ? "" : "s") << "; waiting for them to save" << std::endl;
      }
      for (const auto& r : running) ::kill(r.pid, sig);
      forwarded = received;
    }
    // Start runs while devices are free.
    while (!stopping && next < queue.size()) {
      std::size_t slot = 0;
      while (slot < busy.size() && busy[slot]) ++slot;
      if (slot == busy.size()) break;
      const Job job = queue[next++];
      const SweepRun& run = plan.runs[job.index];
      const std::string dir = dir_of(job.index);
      fs::create_directories(dir);
      std::vector<std::string> argv{options.exe};
      argv.insert(argv.end(), options.global_args.begin(), options.global_args.end());
      const auto args = job.action == Action::Resume ? resume_arguments(dir, slot_devices[slot])
                                                     : train_arguments(plan, run, dir, slot_devices[slot]);
      argv.insert(argv.end(), args.begin(), args.end());
      const std::string log = dir + "/log.txt";
      Running r;
      r.job = job;
      r.slot = slot;
      r.log_offset = file_size_or_zero(log);
      append_line(log, "=== sweep: yoloflow " + join(args));
      write_run_marker(dir, {"running", "", false});
      try {
        r.pid = spawn_logged(argv, log);
      } catch (const std::exception& e) {
        write_run_marker(dir, {"failed", e.what(), false});
        out << tag(job.index) << ": failed to start: " << e.what() << std::endl;
        write_summary(plan, options.out_dir);
        continue;
      }
      r.start = std::chrono::steady_clock::now();
      busy[slot] = true;
      out << tag(job.index) << ": " << (job.action == Action::Resume ? "resuming" : "starting")
          << (slot_devices[slot].empty() ? "" : " on " + slot_devices[slot]) << ", log " << log << std::endl;
      running.push_back(r);
    }
    // Collect finished children.
    bool any = false;
    for (auto it = running.begin(); it != running.end();) {
      int status = 0;
      const pid_t done = ::waitpid(it->pid, &status, WNOHANG);
      if (done != it->pid) {
        ++it;
        continue;
      }
      any = true;
      const std::size_t i = it->job.index;
      const std::string dir = dir_of(i);
      const std::string log = read_from(dir + "/log.txt", it->log_offset);
      const RunState state = read_run_state(dir);
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - it->start).count();
      RunMarker marker;
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        const bool all_epochs = state.epochs > 0 && state.epochs_done >= state.epochs;
        const bool signalled = log.find("interrupted by SIG") != std::string::npos;
        if (all_epochs || (!signalled && !stopping)) {
          marker.status = "done";
          // A run that stopped on its own before the last epoch (patience, max_steps).
          const std::string why = last_line_starting(log, "stopped: ");
          if (!all_epochs && !why.empty()) marker.reason = "stopped early: " + why;
        } else {
          marker.status = "interrupted";
        }
      } else if (stopping && state.has_checkpoint && WIFSIGNALED(status) &&
                 (WTERMSIG(status) == SIGINT || WTERMSIG(status) == SIGTERM)) {
        marker.status = "interrupted";  // a repeated signal ended it before it saved again
      } else {
        marker.status = "failed";
        marker.reason = describe_wait_status(status);
        const std::string err = last_line_starting(log, "error: ");
        if (!err.empty()) marker.reason += ": " + err;
      }
      write_run_marker(dir, marker);
      char secs_text[32];
      std::snprintf(secs_text, sizeof secs_text, "%.1f", secs);
      out << tag(i) << ": " << marker.status << " after " << secs_text << " s"
          << (marker.reason.empty() ? "" : " (" + marker.reason + ")") << std::endl;
      busy[it->slot] = false;
      it = running.erase(it);
    }
    if (any) write_summary(plan, options.out_dir);
    else std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }

  SweepOutcome outcome;
  outcome.stopped = g_signals.load() > 0;
  for (const auto& row : write_summary(plan, options.out_dir)) {
    if (row.status == "done") ++outcome.done;
    else if (row.status == "failed") ++outcome.failed;
    else if (row.status == "interrupted") ++outcome.interrupted;
    else ++outcome.pending;
  }
  return outcome;
}

}  // namespace yoloflow::core
