#include "training/trainer/progress_report.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "yoloflow/log.h"

namespace yoloflow::core {

std::string format_duration(double seconds) {
  const long t = static_cast<long>(seconds + 0.5);
  std::ostringstream os;
  if (t >= 3600) {
    os << t / 3600 << ":" << std::setw(2) << std::setfill('0') << (t / 60) % 60 << ":";
  } else {
    os << (t / 60) << ":";
  }
  os << std::setw(2) << std::setfill('0') << t % 60;
  return os.str();
}


double images_per_second(const ProgressSnapshot& s) { return s.images / std::max(s.epoch_seconds, 1e-9); }

double eta_seconds(const ProgressSnapshot& s) {
  const std::int64_t left = std::max<std::int64_t>(s.steps_in_epoch - s.step, 0) +
                            s.steps_in_epoch * (s.epochs - s.epoch - 1);
  return (s.epoch_seconds / static_cast<double>(std::max<std::int64_t>(s.step, 1))) * static_cast<double>(left);
}

namespace {

// The losses, then Ultralytics' Instances and Size columns (the last batch's labelled objects and
// image size), as the progress line and the terminal's bar both show them.
void put_losses_and_batch(std::ostream& os, const ProgressSnapshot& s) {
  os << std::fixed << std::setprecision(4);
  for (const auto& [name, value] : s.losses) os << "  " << name << " " << value;
  if (s.instances >= 0) os << "  instances " << s.instances;
  if (s.size > 0) os << "  size " << s.size;
}

}  // namespace

std::string progress_line(const ProgressSnapshot& s) {
  std::ostringstream os;
  os << "epoch " << s.epoch + 1 << "/" << s.epochs << "  step " << s.step << "/" << s.steps_in_epoch;
  put_losses_and_batch(os, s);
  os << std::setprecision(1) << "  " << images_per_second(s) << " img/s  data wait " << s.data_wait_ms << " ms  step "
     << s.step_ms << " ms  ETA " << format_duration(eta_seconds(s));
  return os.str();
}

std::string progress_bar(std::int64_t done, std::int64_t total, int width) {
  const std::int64_t full =
      total > 0 ? std::clamp<std::int64_t>(done * width / total, 0, width) : 0;
  std::string bar;
  for (int i = 0; i < width; ++i) bar += i < full ? "\u2501" : "\u2500";  // ━ and ─, as Ultralytics' bars
  return bar;
}

std::string status_line(const ProgressSnapshot& s) {
  std::ostringstream os;
  os << "epoch " << s.epoch + 1 << "/" << s.epochs << " " << progress_bar(s.step, s.steps_in_epoch, 20) << " " << s.step
     << "/" << s.steps_in_epoch;
  put_losses_and_batch(os, s);
  os << std::setprecision(1) << "  " << images_per_second(s) << " img/s  ETA " << format_duration(eta_seconds(s));
  return os.str();
}

StepEvent progress_event(const ProgressSnapshot& s) {
  StepEvent ev;
  ev.epoch = s.epoch;
  ev.step = s.step - 1;
  ev.steps_in_epoch = s.steps_in_epoch;
  ev.global_step = s.global_step;
  ev.images_per_second = images_per_second(s);
  ev.eta_seconds = eta_seconds(s);
  for (const auto& [name, value] : s.losses) ev.values["train/" + name + "_loss"] = value;
  for (std::size_t g = 0; g < s.lrs.size() && g < 3; ++g) ev.values["lr/pg" + std::to_string(g)] = s.lrs[g];
  ev.values["time/data_wait"] = s.data_wait_ms / 1e3;
  ev.values["time/step"] = s.step_ms / 1e3;
  ev.values["loss_scale"] = s.loss_scale;
  return ev;
}

void ProgressWindow::report(ProgressSnapshot& s, RunReporter* reporter) {
  // On CUDA the step's launches run ahead; reading the losses waited for them, so the window's
  // total is right.
  const double window = static_cast<double>(std::max<std::int64_t>(s.step - last_step_, 1));
  s.data_wait_ms = 1e3 * data_wait_ / window;
  s.step_ms = 1e3 * step_time_ / window;
  YF_LOG_INFO(progress_line(s));
  if (reporter != nullptr) reporter->step(progress_event(s));
  data_wait_ = step_time_ = 0.0;
  last_step_ = s.step;
}

}  // namespace yoloflow::core
