#include "runtime/run/epoch_loop.h"

#include <ostream>

#include "runtime/pipeline/pipeline.h"
#include "runtime/run/epoch_run.h"
#include "runtime/plugin/registry.h"
#include "runtime/util/text_format.h"
#include "yoloflow/error.h"

namespace yoloflow::core {

RunDriver::~RunDriver() = default;

std::unique_ptr<RunDriver> make_run_driver(const Pipeline& pipeline, const Registry& registry, const RunOptions& options) {
  const StageSpec& sink = pipeline.stage(pipeline.sink);
  if (sink.component != nullptr && sink.component->driver != nullptr) return sink.component->driver(pipeline, registry, options);
  return std::make_unique<EpochLoop>(pipeline, registry, options);
}

void prepare_run_pipeline(Pipeline& pipeline, const Registry& registry, const std::string& device) {
  const StageSpec& sink = pipeline.stage(pipeline.sink);
  if (sink.component != nullptr && sink.component->prepare != nullptr) sink.component->prepare(pipeline, registry, device);
}

RunEvent run_event(const Pipeline& pipeline, const RunOptions& options) {
  RunEvent e;
  e.run_dir = options.run_dir;
  e.pipeline_name = pipeline.name;
  e.epochs = pipeline.epochs;
  e.device = options.device.empty() ? pipeline.device : options.device;
  return e;
}

void report_epoch(GraphRunner& runner, const EpochStats& s, int epochs, const std::map<std::string, double>& values,
                  std::ostream& out) {
  out << "epoch " << s.epoch + 1 << "/" << epochs << ": " << s.samples << " images in " << s.batches << " batches, "
      << format_fixed(s.seconds, 2) << " s, " << format_fixed(s.images_per_second, 1) << " images/s, " << s.skipped.size()
      << " skipped, peak " << s.peak_in_flight << "/" << s.max_in_flight << " samples in flight; first batch after "
      << format_fixed(s.first_batch_seconds, 2) << " s, end of epoch " << format_fixed(s.end_seconds, 2) << " s"
      << (s.interrupted ? " (interrupted)" : "") << std::endl;
  constexpr std::size_t kShownSkips = 20;
  for (std::size_t i = 0; i < s.skipped.size() && i < kShownSkips; ++i) {
    out << "  skipped sample " << s.skipped[i].index << ": " << s.skipped[i].reason << std::endl;
  }
  if (s.skipped.size() > kShownSkips) out << "  ... and " << s.skipped.size() - kShownSkips << " more" << std::endl;
  if (s.samples == 0 && !s.skipped.empty() && !s.interrupted) {
    // Every sample failed the same way, as images over the decoder's limits do: an epoch of
    // nothing is not a success.
    throw Error("epoch " + std::to_string(s.epoch + 1) + ": none of its " + std::to_string(s.skipped.size()) +
                " samples could be loaded (sample " + std::to_string(s.skipped.front().index) + ": " +
                s.skipped.front().reason + "); nothing was trained");
  }
  EpochEvent ev;
  ev.epoch = s.epoch;
  ev.epochs = epochs;
  ev.seconds = s.seconds;
  ev.values["images_per_second"] = s.images_per_second;
  ev.values["samples"] = static_cast<double>(s.samples);
  ev.values["skipped"] = static_cast<double>(s.skipped.size());
  ev.values["time/first_batch"] = s.first_batch_seconds;
  ev.values["time/end_of_epoch"] = s.end_seconds;
  for (const auto& kv : values) ev.values[kv.first] = kv.second;
  for (const auto& kv : runner.take_epoch_values()) ev.values[kv.first] = kv.second;
  for (auto& m : runner.monitors()) {
    m->on_epoch(ev);
    const std::string line = m->epoch_summary();
    if (!line.empty()) out << "  " << line << std::endl;
  }
}

EpochLoop::EpochLoop(const Pipeline& pipeline, const Registry& registry, const RunOptions& options)
    : pipeline_(pipeline), options_(options), control_(pipeline.epochs, options.stop_flag) {
  RunnerOptions ro;
  ro.run_dir = options.run_dir;
  ro.device = options.device;
  ro.control = &control_;
  runner_ = std::make_unique<GraphRunner>(pipeline, registry, ro);
}

RunOutcome EpochLoop::run(std::ostream& out) {
  EpochRunSteps steps;
  steps.epoch = [this](int epoch) { return runner_->run_epoch(epoch); };
  return run_epochs(*runner_, options_, steps, out);
}

}  // namespace yoloflow::core
