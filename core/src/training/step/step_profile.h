#pragma once
// Phase-by-phase timing of sampled training steps (the train sink's `profile_every`): data
// wait, host-to-device copy, forward + loss, backward, optimizer + EMA. A sampled step waits
// for the device at every phase boundary, so each phase's time is its own work and not just
// its launches; the steps in between keep their overlap. Rows go to steps.csv, means to the
// epoch summary.
#include <array>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <string>

namespace yoloflow::core {

class StepProfile {
 public:
  enum Phase { kHostToDevice, kForward, kBackward, kOptimizer, kPhaseCount };

  // `every` 0 = off. `sync` waits for the device's queued work (a no-op on the CPU). An
  // existing `csv_path` is appended to (a resumed run); nothing is written before the first
  // sampled step.
  StepProfile(std::string csv_path, std::int64_t every, std::function<void()> sync);

  // Starts a step; true when it is sampled (every `every`-th step of the run).
  bool begin(int epoch, std::int64_t step, std::int64_t global_step, double data_wait_seconds);
  // Ends `phase` of a sampled step (no-op otherwise); phases not ended count 0.
  void end_phase(Phase phase);
  void end_step();

  // Mean milliseconds per sampled step since the last call, by column name
  // ("profile/forward_ms", ...); empty when no step was sampled. Flushes steps.csv.
  std::map<std::string, double> take_epoch_means();
  static std::string summary(const std::map<std::string, double>& means);

 private:
  using Clock = std::chrono::steady_clock;
  void open();
  std::string path_;
  std::int64_t every_;
  std::function<void()> sync_;
  std::ofstream out_;
  bool sampling_ = false;
  std::int64_t seen_ = 0;
  Clock::time_point mark_;
  int epoch_ = 0;
  std::int64_t step_ = 0, global_step_ = 0;
  double wait_ms_ = 0;
  std::array<double, kPhaseCount> ms_{};
  // Sums over the epoch's sampled steps: data wait, the phases, total.
  std::array<double, kPhaseCount + 2> sums_{};
  std::int64_t sampled_ = 0;
};

}  // namespace yoloflow::core
