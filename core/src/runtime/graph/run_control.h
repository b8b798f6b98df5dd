#pragma once
// How a running pipeline is steered, with one owner: the run's driver (the trainer, the epoch
// loop) holds it and decides; the graph runner obeys it between samples. It says whether the run
// stops (and why), whether the running epoch ends early, and how many epochs the run has (a
// time budget plans them again after each epoch; the schedules counted from the end follow).
// Stages and monitors ask for a stop through RunReporter::request_stop, which lands here; a
// signal handler sets the flag it reads (the handler may do nothing else).
#include <atomic>
#include <mutex>
#include <string>

namespace yoloflow::core {

class RunControl {
 public:
  // `signal_flag`, set by a signal handler, may be null; it must outlive the control.
  explicit RunControl(int epochs = 1, const std::atomic<bool>* signal_flag = nullptr)
      : signal_flag_(signal_flag), epochs_(epochs) {}
  RunControl(const RunControl&) = delete;
  RunControl& operator=(const RunControl&) = delete;

  // Thread-safe: the run stops after the batch in hand; the first reason given is kept
  // ("stop requested" when it is empty). Async-signal-safe without a reason: stop_now().
  void request_stop(const std::string& reason) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (reason_.empty()) reason_ = reason.empty() ? "stop requested" : reason;
    }
    stop_.store(true);
  }
  void stop_now() { stop_.store(true); }
  bool stop_requested() const { return stop_.load() || (signal_flag_ != nullptr && signal_flag_->load()); }
  // Why the run asked itself to stop; "" for a signal or no stop.
  std::string stop_reason() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return reason_;
  }

  // Thread-safe: the running epoch takes no more samples and ends as a whole one, cut short;
  // the run goes on. Cleared when the next epoch starts.
  void end_epoch_early() { end_epoch_.store(true); }
  bool epoch_ending() const { return end_epoch_.load(); }
  void epoch_started() { end_epoch_.store(false); }
  // Whether the running pass takes no more samples: a stop, or the epoch ended early.
  bool pass_stopping() const { return stop_requested() || epoch_ending(); }

  // The run's epoch count as planned now.
  int epochs() const { return epochs_.load(); }
  void plan_epochs(int epochs) { epochs_.store(epochs); }

 private:
  const std::atomic<bool>* signal_flag_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> end_epoch_{false};
  std::atomic<int> epochs_;
  mutable std::mutex mutex_;
  std::string reason_;
};

}  // namespace yoloflow::core
