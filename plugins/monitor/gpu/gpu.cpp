// gpu: how busy the run's GPU is, from NVML, sampled on a background thread. After each
// epoch it prints its mean utilisation, peak memory, mean power and SM clock, and every
// reading goes to gpu.csv in the run folder. Without an NVIDIA driver it warns once and does
// nothing (unless `required`), so one pipeline serves GPU and CPU machines.
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>

#include "low_utilisation.h"
#include "nvml_sampler.h"
#include "yoloflow/error.h"
#include "yoloflow/log.h"
#include "yoloflow/monitor.h"
#include "yoloflow/plugin.h"

namespace yoloflow::plugins {
namespace {

using namespace gpu_monitor;

class GpuMonitor final : public Monitor {
 public:
  static Schema schema() {
    Schema s;
    s.add_int("interval_ms", 200).range(10, 60000).fixed().doc(
        "Milliseconds between readings (NVML itself updates utilisation every 1/6 s to 1 s, by GPU).");
    s.add_bool("required", false).fixed().doc(
        "Fail the run when the GPU cannot be read (no driver, CPU run); false: warn once and go on.");
    s.add_float("busy_target", 80.0).range(0.0, 100.0).fixed().doc(
        "Mean utilisation (%) below which the epoch summary says why (data wait or a host-bound step) and what to change.");
    s.add_string("library", "libnvidia-ml.so.1").fixed().doc(
        "NVML library to load: a name the dynamic loader finds, or a path.");
    return s;
  }

  void configure(const Params& p, const StageContext& context) override {
    interval_ms_ = p.get_int("interval_ms");
    required_ = p.get_bool("required");
    library_ = p.get_string("library");
    busy_target_ = p.get_float("busy_target");
    reporter_ = context.reporter;
  }

  void on_run_start(const RunEvent& event) override {
    const int cuda = cuda_index_of_run(event.device);
    if (cuda < 0) return unavailable("the run trains on the CPU (device 'cpu')");
    const DeviceChoice choice = choose_device(cuda, std::getenv("CUDA_VISIBLE_DEVICES"));
    OpenedSampler opened = open_nvml_sampler(library_, choice);
    if (!opened.sampler) return unavailable(opened.why_not);
    const std::string csv = event.run_dir.empty() ? "" : event.run_dir + "/gpu.csv";
    label_ = "cuda:" + std::to_string(cuda) + " " + opened.description;
    recorder_ = std::make_unique<GpuRecorder>(std::move(opened.sampler), std::chrono::milliseconds(interval_ms_), csv);
    YF_LOG_INFO("gpu: sampling " << label_ << " every " << interval_ms_ << " ms"
                                 << (csv.empty() ? std::string() : "; readings in " + csv));
  }

  void on_step(const StepEvent& event) override {
    if (!recorder_) return;
    recorder_->file_under(event.epoch);
    auto value = [&](const char* key) {
      const auto it = event.values.find(key);
      return it == event.values.end() ? std::nan("") : it->second;
    };
    step_times_.add(value("time/data_wait"), value("time/step"));
    // The epoch's figures so far join the epoch's values (later reports win), so other
    // monitors such as TensorBoard receive GPU utilisation with the losses and metrics.
    if (reporter_ != nullptr) reporter_->epoch_values(recorder_->current().values());
  }

  void on_epoch(const EpochEvent& event) override {
    if (!recorder_) return;
    const EpochStats stats = recorder_->end_epoch(event.epoch);
    summary_ = stats.summary(label_);
    auto value = [&](const char* key) {
      const auto it = event.values.find(key);
      return it == event.values.end() ? std::nan("") : it->second;
    };
    EpochTimes times;
    times.seconds = event.seconds;
    times.first_batch = value("time/first_batch");
    times.end = value("time/end_of_epoch");
    times.eager_steps = value("step/eager");
    times.replayed_steps = value("step/replayed");
    const std::string why = explain_low_utilisation(stats.util().mean(), busy_target_, step_times_, times);
    if (!why.empty()) summary_ += "\n  " + why;
    step_times_.clear();
  }

  std::string epoch_summary() override { return std::exchange(summary_, std::string()); }

  void on_run_end(const RunEvent& event) override {
    if (recorder_) recorder_->stop();
  }

 private:
  void unavailable(const std::string& why) {
    if (required_) throw Error("gpu: " + why + " (the gpu monitor's `required` is true)");
    YF_LOG_WARN("gpu: " << why << "; GPU monitoring is off for this run");
  }

  std::int64_t interval_ms_ = 200;
  bool required_ = false;
  std::string library_;
  std::string label_, summary_;
  std::unique_ptr<GpuRecorder> recorder_;
  RunReporter* reporter_ = nullptr;
  double busy_target_ = 80.0;
  StepTimes step_times_;  // this epoch's step reports
};

void register_gpu(Registrar& r) {
  r.add_monitor<GpuMonitor>(
      "gpu", GpuMonitor::schema(),
      "Samples the run's GPU through NVML (utilisation, memory, power, SM clock): a summary after "
      "each epoch and gpu.csv in the run folder; warns and does nothing without a driver.");
}

}  // namespace
}  // namespace yoloflow::plugins

YOLOFLOW_PLUGIN("gpu", "1.0.0", yoloflow::plugins::register_gpu)
