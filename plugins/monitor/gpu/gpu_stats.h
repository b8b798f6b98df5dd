#pragma once
// GPU counter readings, their per-epoch aggregate (mean and peak) and the one-line summary
// printed after each epoch. A counter the GPU does not report (e.g. utilisation under MIG)
// is NaN and left out of means, peaks and the summary.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <string>

namespace yoloflow::gpu_monitor {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct GpuReading {
  double util_percent = kNaN;      // time a kernel ran, over the driver's sample period
  double mem_util_percent = kNaN;  // time device memory was read or written
  double mem_used_gib = kNaN;
  double mem_total_gib = kNaN;
  double power_w = kNaN;
  double sm_clock_mhz = kNaN;
};

// Mean and max of one counter, NaNs skipped.
class Series {
 public:
  void add(double v) {
    if (std::isnan(v)) return;
    sum_ += v;
    max_ = n_ ? std::max(max_, v) : v;
    ++n_;
  }
  bool empty() const { return n_ == 0; }
  double mean() const { return n_ ? sum_ / static_cast<double>(n_) : kNaN; }
  double max() const { return n_ ? max_ : kNaN; }

 private:
  double sum_ = 0, max_ = 0;
  long n_ = 0;
};

class EpochStats {
 public:
  void add(const GpuReading& r) {
    ++samples_;
    util_.add(r.util_percent);
    mem_util_.add(r.mem_util_percent);
    mem_used_.add(r.mem_used_gib);
    mem_total_.add(r.mem_total_gib);
    power_.add(r.power_w);
    clock_.add(r.sm_clock_mhz);
  }
  long samples() const { return samples_; }
  const Series& util() const { return util_; }
  const Series& mem_util() const { return mem_util_; }
  const Series& mem_used() const { return mem_used_; }
  const Series& power() const { return power_; }
  const Series& clock() const { return clock_; }

  // The epoch's figures so far as run values ("gpu/busy_percent", ...) for the other
  // monitors (TensorBoard); counters not reported are left out.
  std::map<std::string, double> values() const {
    std::map<std::string, double> v;
    if (!util_.empty()) v["gpu/busy_percent"] = util_.mean();
    if (!mem_util_.empty()) v["gpu/mem_busy_percent"] = mem_util_.mean();
    if (!mem_used_.empty()) v["gpu/mem_used_GiB"] = mem_used_.max();
    if (!power_.empty()) v["gpu/power_W"] = power_.mean();
    if (!clock_.empty()) v["gpu/sm_clock_MHz"] = clock_.mean();
    return v;
  }

  // "GPU 0: busy 94% (mean, max 100%), mem 5.1/140.0 GiB (peak), 310 W (mean), SM 1980 MHz (mean), 52 samples"
  std::string summary(const std::string& gpu) const {
    if (samples_ == 0) return gpu + ": no samples this epoch";
    std::string s = gpu + ":";
    const char* sep = " ";
    if (!util_.empty()) {
      s += sep + format("busy %.0f%% (mean, max %.0f%%)", util_.mean(), util_.max());
      sep = ", ";
    }
    if (!mem_used_.empty()) {
      s += sep + format("mem %.1f", mem_used_.max()) +
           (mem_total_.empty() ? std::string() : format("/%.1f", mem_total_.max())) + " GiB (peak)";
      sep = ", ";
    }
    if (!power_.empty()) {
      s += sep + format("%.0f W (mean)", power_.mean());
      sep = ", ";
    }
    if (!clock_.empty()) {
      s += sep + format("SM %.0f MHz (mean)", clock_.mean());
      sep = ", ";
    }
    return s + sep + std::to_string(samples_) + (samples_ == 1 ? " sample" : " samples");
  }

 private:
  static std::string format(const char* fmt, double a, double b = 0) {
    char buf[96];
    std::snprintf(buf, sizeof buf, fmt, a, b);
    return buf;
  }
  long samples_ = 0;
  Series util_, mem_util_, mem_used_, mem_total_, power_, clock_;
};

}  // namespace yoloflow::gpu_monitor
