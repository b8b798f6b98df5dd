#pragma once
// Samples a GPU on a background thread (training must not wait for the driver), files each
// reading under the epoch that was running when the monitor next hears from the trainer,
// keeps the epoch's mean and peak, and appends every reading to a CSV.
// Header-only so that tests can drive it with a sampler of their own.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gpu_stats.h"
#include "yoloflow/error.h"

namespace yoloflow::gpu_monitor {

class GpuSampler {
 public:
  virtual ~GpuSampler() = default;
  // One reading now; counters it cannot read are NaN. Must not throw.
  virtual GpuReading read() = 0;
};

class GpuRecorder {
 public:
  static constexpr const char* kCsvHeader = "time,epoch,gpu_util,mem_util,mem_used_GiB,mem_total_GiB,power_W,sm_clock_MHz";

  // `csv_path` "" writes no CSV. An existing CSV (a resumed run) is appended to.
  GpuRecorder(std::unique_ptr<GpuSampler> sampler, std::chrono::milliseconds interval, std::string csv_path)
      : sampler_(std::move(sampler)), interval_(interval), csv_path_(std::move(csv_path)) {
    if (!csv_path_.empty()) {
      const bool fresh = !std::ifstream(csv_path_).good() || std::ifstream(csv_path_, std::ios::ate).tellg() == 0;
      csv_.open(csv_path_, std::ios::app);
      if (!csv_) throw Error("gpu: cannot write '" + csv_path_ + "'");
      if (fresh) csv_ << kCsvHeader << "\n";
    }
    start_ = Clock::now();
    thread_ = std::thread([this] { loop(); });
  }
  GpuRecorder(const GpuRecorder&) = delete;
  GpuRecorder& operator=(const GpuRecorder&) = delete;
  ~GpuRecorder() { stop(); }

  // The readings taken since the last call belong to `epoch` (0-based): the trainer just
  // reported from it.
  void file_under(int epoch) {
    last_epoch_ = epoch;
    std::vector<Timed> taken;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      taken.swap(pending_);
    }
    for (const auto& t : taken) {
      stats_.add(t.reading);
      if (csv_.is_open()) write_row(t, epoch);
    }
  }

  // The running epoch's statistics, up to the last file_under().
  const EpochStats& current() const { return stats_; }

  // Ends `epoch`: files the pending readings under it (taking one now if the epoch was
  // shorter than the interval), returns its statistics and starts afresh.
  EpochStats end_epoch(int epoch) {
    file_under(epoch);
    if (stats_.samples() == 0) {
      take_reading();
      file_under(epoch);
    }
    if (csv_.is_open()) {
      csv_.flush();
      if (!csv_) throw Error("gpu: cannot write '" + csv_path_ + "' (disk full?)");
    }
    return std::exchange(stats_, EpochStats{});
  }

  // Stops sampling; readings since the last epoch go under the last epoch heard of.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
    file_under(last_epoch_);
    if (csv_.is_open()) csv_.close();
  }

 private:
  using Clock = std::chrono::steady_clock;
  struct Timed {
    double seconds;
    GpuReading reading;
  };

  void take_reading() {
    const GpuReading r = sampler_->read();
    const double t = std::chrono::duration<double>(Clock::now() - start_).count();
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.push_back({t, r});
  }

  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
      lock.unlock();
      take_reading();
      lock.lock();
      wake_.wait_for(lock, interval_, [this] { return stopping_; });
    }
  }

  void write_row(const Timed& t, int epoch) {
    auto cell = [](double v, const char* fmt) {
      if (std::isnan(v)) return std::string();
      char buf[48];
      std::snprintf(buf, sizeof buf, fmt, v);
      return std::string(buf);
    };
    const GpuReading& r = t.reading;
    csv_ << cell(t.seconds, "%.3f") << "," << epoch + 1 << "," << cell(r.util_percent, "%.0f") << ","
         << cell(r.mem_util_percent, "%.0f") << "," << cell(r.mem_used_gib, "%.3f") << ","
         << cell(r.mem_total_gib, "%.3f") << "," << cell(r.power_w, "%.1f") << "," << cell(r.sm_clock_mhz, "%.0f")
         << "\n";
  }

  std::unique_ptr<GpuSampler> sampler_;
  std::chrono::milliseconds interval_;
  std::string csv_path_;
  std::ofstream csv_;
  Clock::time_point start_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<Timed> pending_;
  std::thread thread_;
  EpochStats stats_;
  int last_epoch_ = 0;
};

}  // namespace yoloflow::gpu_monitor
