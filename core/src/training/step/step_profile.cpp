#include "training/step/step_profile.h"

#include <cstdio>
#include <filesystem>
#include <utility>

#include "yoloflow/error.h"

namespace yoloflow::core {
namespace {

const char* const kColumns[] = {"data_wait_ms", "h2d_ms", "forward_ms", "backward_ms", "optimizer_ms", "total_ms"};

}  // namespace

StepProfile::StepProfile(std::string csv_path, std::int64_t every, std::function<void()> sync)
    : path_(std::move(csv_path)), every_(every), sync_(std::move(sync)) {}

// Opened at the first sampled step, not at construction: a run refused while it is being
// built writes nothing into its folder.
void StepProfile::open() {
  std::error_code ec;
  const bool fresh = !std::filesystem::exists(path_, ec) || std::filesystem::file_size(path_, ec) == 0;
  out_.open(path_, std::ios::app);
  if (!out_) throw Error("cannot write " + path_);
  if (fresh) {
    out_ << "epoch,step,global_step";
    for (const char* c : kColumns) out_ << ',' << c;
    out_ << '\n';
  }
}

bool StepProfile::begin(int epoch, std::int64_t step, std::int64_t global_step, double data_wait_seconds) {
  sampling_ = every_ > 0 && (seen_++ % every_) == 0;
  if (!sampling_) return false;
  sync_();  // the previous step's queued work is not this step's
  epoch_ = epoch;
  step_ = step;
  global_step_ = global_step;
  wait_ms_ = 1e3 * data_wait_seconds;
  ms_.fill(0.0);
  mark_ = Clock::now();
  return true;
}

void StepProfile::end_phase(Phase phase) {
  if (!sampling_) return;
  sync_();
  const auto now = Clock::now();
  ms_[phase] += std::chrono::duration<double, std::milli>(now - mark_).count();
  mark_ = now;
}

void StepProfile::end_step() {
  if (!sampling_) return;
  sampling_ = false;
  double total = 0;
  for (double v : ms_) total += v;
  char line[256];
  std::snprintf(line, sizeof line, "%d,%lld,%lld,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f\n", epoch_ + 1,
                static_cast<long long>(step_ + 1), static_cast<long long>(global_step_), wait_ms_,
                ms_[kHostToDevice], ms_[kForward], ms_[kBackward], ms_[kOptimizer], total);
  if (!out_.is_open()) open();
  out_ << line;
  sums_[0] += wait_ms_;
  for (int p = 0; p < kPhaseCount; ++p) sums_[static_cast<std::size_t>(p) + 1] += ms_[static_cast<std::size_t>(p)];
  sums_[kPhaseCount + 1] += total;
  ++sampled_;
}

std::map<std::string, double> StepProfile::take_epoch_means() {
  std::map<std::string, double> means;
  if (out_.is_open()) out_.flush();
  if (sampled_ == 0) return means;
  for (std::size_t i = 0; i < sums_.size(); ++i) {
    means[std::string("profile/") + kColumns[i]] = sums_[i] / static_cast<double>(sampled_);
  }
  means["profile/steps"] = static_cast<double>(sampled_);
  sums_.fill(0.0);
  sampled_ = 0;
  return means;
}

std::string StepProfile::summary(const std::map<std::string, double>& m) {
  if (m.empty()) return "";
  auto at = [&](const char* key) { return m.at(std::string("profile/") + key); };
  char text[256];
  std::snprintf(text, sizeof text,
                "step profile (%.0f sampled steps, mean ms): data wait %.1f, host-to-device %.1f, forward+loss "
                "%.1f, backward %.1f, optimizer+EMA %.1f, step %.1f",
                at("steps"), at("data_wait_ms"), at("h2d_ms"), at("forward_ms"), at("backward_ms"),
                at("optimizer_ms"), at("total_ms"));
  return text;
}

}  // namespace yoloflow::core
