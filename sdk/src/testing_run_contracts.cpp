// The contracts of the kinds the training run drives through its epochs: sink, monitor,
// scheduler and callback (its hooks and JSON state), each called in the host's order.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <sstream>

#include "yoloflow/testing.h"

namespace yoloflow::testing {

using detail::returns;

namespace {

// `b` with a copy of its pixels: each call gets a batch of its own, as from the graph.
Batch copy_of(const Batch& b) {
  Batch c = b;
  const auto bytes = static_cast<std::size_t>(b.size * b.height * b.width * 3);
  std::shared_ptr<std::uint8_t> pixels(new std::uint8_t[bytes > 0 ? bytes : 1], std::default_delete<std::uint8_t[]>());
  if (bytes > 0 && b.pixels) std::copy(b.pixels.get(), b.pixels.get() + bytes, pixels.get());
  c.pixels = pixels;
  return c;
}

}  // namespace

std::vector<std::string> sink_contract(Sink& sink, const std::vector<Batch>& batches) {
  std::vector<std::string> out;
  if (batches.empty()) return {"no batches to check with"};
  for (int epoch = 0; epoch < 2; ++epoch) {
    const std::string e = "epoch " + std::to_string(epoch) + ": ";
    if (!returns(e + "begin_epoch", out, [&] { sink.begin_epoch(epoch); })) return out;
    for (std::size_t k = 0; k < batches.size(); ++k) {
      Batch b = copy_of(batches[k]);
      b.epoch = epoch;
      b.index = static_cast<std::int64_t>(k);
      if (!returns(e + "consume(batch " + std::to_string(k) + ")", out, [&] { sink.consume(b); })) return out;
    }
    if (!returns(e + "end_epoch", out, [&] { sink.end_epoch(epoch); })) return out;
  }
  // A stopped epoch: one batch, then interrupted() instead of end_epoch().
  if (!returns("epoch 2: begin_epoch", out, [&] { sink.begin_epoch(2); })) return out;
  Batch b = copy_of(batches.front());
  b.epoch = 2;
  returns("epoch 2: consume(batch 0)", out, [&] { sink.consume(b); });
  returns("epoch 2: interrupted", out, [&] { sink.interrupted(2); });
  returns("summary()", out, [&] { (void)sink.summary(); });
  return out;
}

std::vector<std::string> monitor_contract(Monitor& monitor, const std::string& run_dir, int epochs, int steps,
                                          double max_call_ms) {
  std::vector<std::string> out;
  double slowest = 0.0;
  std::string slowest_call;
  auto timed = [&](const std::string& what, auto&& call) {
    const auto t0 = std::chrono::steady_clock::now();
    const bool ok = returns(what, out, call);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (ms > slowest) {
      slowest = ms;
      slowest_call = what;
    }
    return ok;
  };
  RunEvent run;
  run.run_dir = run_dir;
  run.pipeline_name = "contract";
  run.epochs = epochs;
  run.steps_per_epoch = steps;
  run.device = "cpu";
  if (!timed("on_run_start", [&] { monitor.on_run_start(run); })) return out;
  std::int64_t global = 0;
  for (int e = 0; e < epochs; ++e) {
    for (int k = 0; k < steps; ++k) {
      StepEvent step;
      step.epoch = e;
      step.step = k;
      step.steps_in_epoch = steps;
      step.global_step = global++;
      step.images_per_second = 100.0;
      step.eta_seconds = 1.0;
      step.values = {{"train/box_loss", 1.0 / (1 + global)}, {"lr/pg0", 0.01}};
      if (!timed("on_step(epoch " + std::to_string(e) + ", step " + std::to_string(k) + ")",
                 [&] { monitor.on_step(step); })) {
        return out;
      }
    }
    std::string summary;
    timed("epoch_summary", [&] { summary = monitor.epoch_summary(); });
    if (summary.find('\n') != std::string::npos) out.push_back("epoch_summary() is more than one line: " + summary);
    EpochEvent epoch;
    epoch.epoch = e;
    epoch.epochs = epochs;
    epoch.seconds = 1.0;
    epoch.values = {{"train/box_loss", 1.0}, {"metrics/mAP50-95(B)", 0.1 * e}};
    epoch.summary = summary;
    if (!timed("on_epoch(" + std::to_string(e) + ")", [&] { monitor.on_epoch(epoch); })) return out;
  }
  timed("on_run_end", [&] { monitor.on_run_end(run); });
  if (slowest > max_call_ms) {
    std::ostringstream os;
    os << slowest_call << " took " << slowest << " ms (at most " << max_call_ms << ": the run waits for monitors)";
    out.push_back(os.str());
  }
  return out;
}

std::vector<std::string> scheduler_contract(const Scheduler& scheduler) {
  std::vector<std::string> out;
  for (int epochs : {1, 2, 10, 300}) {
    for (int e = 0; e < epochs; ++e) {
      std::ostringstream what;
      what << "lr_factor(" << e << ", " << epochs << ")";
      double a = 0, b = 0;
      if (!returns(what.str(), out, [&] { a = scheduler.lr_factor(e, epochs); b = scheduler.lr_factor(e, epochs); })) {
        return out;
      }
      if (!std::isfinite(a) || a <= 0.0 || a > 100.0) {
        what << " is " << a << ", not a factor in (0, 100]";
        out.push_back(what.str());
        return out;
      }
      if (a != b) {
        what << " gave " << a << ", then " << b;
        out.push_back(what.str());
        return out;
      }
    }
  }
  return out;
}

std::vector<std::string> callback_contract(Callback& callback, Callback& fresh, const Batch& batch,
                                           const std::string& run_dir, int epochs, int steps) {
  std::vector<std::string> out;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(run_dir) / "weights", ec);
  RecordingControl control;
  TrainRun run;
  run.run_dir = run_dir;
  run.names = {"person", "bicycle", "car"};
  run.epochs = epochs;
  if (!returns("on_train_start", out, [&] { callback.on_train_start(run, control); })) return out;
  TrainProgress progress;
  progress.epochs = epochs;
  progress.steps_in_epoch = steps;
  int epoch = 0;
  for (; epoch < epochs && control.stops.empty(); ++epoch) {
    progress.epoch = epoch;
    const std::string e = "epoch " + std::to_string(epoch) + ": ";
    for (int k = 0; k < steps; ++k) {
      progress.step = k;
      progress.optimizer_stepped = false;
      Batch b = copy_of(batch);
      b.epoch = epoch;
      b.index = k;
      if (!returns(e + "on_batch_start", out, [&] { callback.on_batch_start(b, progress, control); })) return out;
      progress.step = k + 1;
      progress.optimizer_stepped = true;
      ++progress.global_step;
      if (!returns(e + "on_batch_end", out, [&] { callback.on_batch_end(progress, control); })) return out;
    }
    EpochSummary summary;
    summary.validated = true;
    summary.fitness = 0.1 + 0.05 * epoch;
    summary.last = epoch + 1 == epochs;
    summary.values = {{"metrics/mAP50-95(B)", summary.fitness}};
    if (!returns(e + "on_epoch_end", out, [&] { callback.on_epoch_end(summary, progress, control); })) return out;
    // What a checkpoint written now holds, and what a resumed run gets back from it.
    json state;
    if (!returns(e + "state()", out, [&] { state = callback.state(); })) return out;
    json again;
    if (!returns(e + "load_state() of another instance", out, [&] { fresh.load_state(state); })) return out;
    if (!returns(e + "state() of the loaded instance", out, [&] { again = fresh.state(); })) return out;
    if (again != state) {
      out.push_back(e + "state() " + state.dump() + " comes back from load_state() as " + again.dump());
    }
  }
  returns("on_train_end", out, [&] { callback.on_train_end(progress, control); });
  for (const auto& file : control.saved) {
    if (file.empty() || file.find('/') != std::string::npos || file == "." || file == "..") {
      out.push_back("save_checkpoint(\"" + file + "\"): not a file name in the weights folder");
    }
  }
  for (const auto& reason : control.stops) {
    if (reason.empty()) out.push_back("request_stop() without a reason");
  }
  return out;
}

}  // namespace yoloflow::testing
