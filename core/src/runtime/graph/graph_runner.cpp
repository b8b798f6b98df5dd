#include "runtime/graph/graph_runner.h"

#include <oneapi/tbb/info.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include "runtime/dist/runtime.h"
#include "runtime/graph/epoch_order.h"
#include "runtime/graph/graph_pass.h"
#include "runtime/graph/failure_text.h"
#include "runtime/graph/stage_sample_loaders.h"
#include "runtime/pipeline/component_factory.h"
#include "runtime/pipeline/component_origin.h"
#include "runtime/pipeline/component_spec.h"
#include "yoloflow/error.h"
#include "yoloflow/log.h"
#include "yoloflow/rng.h"

namespace yoloflow::core {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

// Forwards stage reports to the monitors. Sinks run serially, so calls do not overlap;
// the lock covers stages that report from their own threads. Recursive: a monitor may
// report epoch values from its on_step (the gpu monitor's utilisation).
class GraphRunner::Reporter final : public RunReporter {
 public:
  explicit Reporter(GraphRunner& runner) : runner_(runner) {}
  void step(const StepEvent& event) override {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    for (std::size_t i = 0; i < runner_.monitors_.size(); ++i) {
      try {
        runner_.monitors_[i]->on_step(event);
      } catch (const std::exception& e) {
        const auto& spec = runner_.pipeline_.monitors.at(i);
        throw Error(component_origin(*spec.component, spec.path).text() + " failed in on_step: " + e.what());
      }
    }
  }
  void epoch_values(const std::map<std::string, double>& values) override {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    for (const auto& kv : values) values_[kv.first] = kv.second;
  }
  void request_stop(const std::string& reason) override { runner_.control_->request_stop(reason); }
  std::map<std::string, double> take() {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    return std::exchange(values_, {});
  }

 private:
  GraphRunner& runner_;
  std::recursive_mutex mutex_;
  std::map<std::string, double> values_;
};

std::map<std::string, double> GraphRunner::take_epoch_values() { return reporter_->take(); }

GraphRunner::GraphRunner(const Pipeline& pipeline, const Registry& registry, RunnerOptions options)
    : pipeline_(pipeline), registry_(registry), options_(std::move(options)) {
  if (options_.control == nullptr) own_control_ = std::make_unique<RunControl>(pipeline_.epochs, options_.stop_flag);
  control_ = options_.control != nullptr ? options_.control : own_control_.get();
  if (pipeline_.source.empty() || pipeline_.batcher.empty() || pipeline_.sink.empty()) {
    throw Error("the pipeline has no linear source -> batcher -> sink chain to run");
  }
  const int cores = std::max(1, tbb::info::default_concurrency());
  workers_ = workers_for(pipeline_);
  if (pipeline_.workers > cores) {
    YF_LOG_INFO("workers=" << pipeline_.workers << ": this machine runs " << cores << " threads at once; using "
                           << cores << " workers");
  }
  reporter_ = std::make_unique<Reporter>(*this);
  for (const auto& m : pipeline_.monitors) {
    StageContext ctx = context(m.path, options_.first_epoch);
    monitors_.push_back(create_component<Monitor>(
        registry_, Kind::Monitor, {{"plugin", m.plugin}, {"params", m.params}}, m.path, ctx));
  }
  auto make = [&](const std::string& name) {
    const StageSpec& spec = pipeline_.stage(name);
    return registry_.create(spec.kind, spec.plugin, "stage '" + name + "'");
  };
  auto add_stage = [&](const std::string& name, Component* component) {
    Stage s;
    s.spec = &pipeline_.stage(name);
    s.component = component;
    stages_.push_back(std::move(s));
  };
  source_.reset(static_cast<DataSource*>(make(pipeline_.source).release()));
  add_stage(pipeline_.source, source_.get());
  for (const auto& name : pipeline_.augmentations) {
    augmentations_.emplace_back(static_cast<Augmentation*>(make(name).release()));
    add_stage(name, augmentations_.back().get());
  }
  batcher_.reset(static_cast<Batcher*>(make(pipeline_.batcher).release()));
  add_stage(pipeline_.batcher, batcher_.get());
  if (options_.sink != nullptr) {
    sink_ = options_.sink;
  } else {
    owned_sink_.reset(static_cast<Sink*>(make(pipeline_.sink).release()));
    sink_ = owned_sink_.get();
  }
  add_stage(pipeline_.sink, sink_);
  stages_.back().external = options_.sink != nullptr;

  prepare(options_.first_epoch);
  if (PixelAllocator allocator = sink_->pixel_allocator()) batcher_->set_allocator(allocator);

}

GraphRunner::~GraphRunner() = default;

// No more workers than the threads the machine runs at once (Ultralytics caps its workers at
// the CPU count too): more only take turns, and oneTBB would warn that it ignores them.
int GraphRunner::workers_for(const Pipeline& pipeline) {
  const int cores = std::max(1, tbb::info::default_concurrency());
  return pipeline.workers > 0 ? std::min(pipeline.workers, cores) : cores;
}

StageContext GraphRunner::context(const std::string& node, int epoch) const {
  StageContext c;
  c.node = node;
  c.imgsz = pipeline_.imgsz(epoch, control_->epochs());
  c.epoch = epoch;
  c.epochs = control_->epochs();
  c.seed = pipeline_.seed;
  c.deterministic = pipeline_.deterministic;
  c.workers = workers_;
  c.run_dir = options_.run_dir;
  c.device = options_.device.empty() ? pipeline_.device : options_.device;
  c.reporter = reporter_.get();
  c.schedule = scheduled_values(epoch);
  // Every index of the source is delivered once per epoch (skipped loads aside), split
  // between the ranks of a data-parallel run.
  c.samples_per_epoch =
      source_ ? static_cast<std::int64_t>(shard_size(source_->size(), dist::current_env().world_size)) : 0;
  return c;
}

std::string GraphRunner::stage_label(const Stage& s) const {
  return stage_text(*s.spec);
}

std::map<std::string, double> GraphRunner::scheduled_values(int epoch) const {
  std::map<std::string, double> out;
  // A schedule is an object where the resolved value is a number.
  if (pipeline_.document.contains("imgsz") && pipeline_.document["imgsz"].is_object()) {
    out["imgsz"] = pipeline_.imgsz(epoch, control_->epochs());
  }
  for (const auto& s : stages_) {
    const json& raw = s.spec->params;
    const json resolved = pipeline_.stage_params(s.spec->name, epoch, control_->epochs());
    const std::string prefix = "stages." + s.spec->name + ".params.";
    for (auto it = resolved.begin(); it != resolved.end(); ++it) {
      if (!it.value().is_number() || !raw.contains(it.key()) || !raw[it.key()].is_object()) continue;
      out[prefix + it.key()] = it.value().get<double>();
    }
    // Schedules inside a component the stage names ("loss": {"plugin": ..., "params": {"box":
    // {"steps": ...}}}): the stage is reconfigured when one of them changes.
    for (const auto& spec : s.spec->component->info.schema.params()) {
      if (spec.type != ParamType::Component || !raw.contains(spec.name)) continue;
      const json& nested = raw[spec.name];
      Kind kind;
      if (!nested.is_object() || !nested.contains("plugin") || !nested["plugin"].is_string() ||
          !nested.contains("params") || !kind_from_name(spec.kind, kind)) {
        continue;
      }
      const RegisteredComponent* rc = registry_.find(kind, nested["plugin"].get<std::string>());
      if (rc == nullptr) continue;
      const json values = rc->info.schema.resolve(nested["params"], epoch, control_->epochs());
      for (const auto& name : rc->info.schema.scheduled(nested["params"])) {
        if (values[name].is_number()) out[prefix + spec.name + ".params." + name] = values[name].get<double>();
      }
    }
  }
  return out;
}

void GraphRunner::prepare(int epoch) {
  for (auto& s : stages_) configure_stage(s, pipeline_.stage_params(s.spec->name, epoch, control_->epochs()), epoch);
  plan_pixels_ = decide_pixel_plans(epoch);
}

bool GraphRunner::decide_pixel_plans(int epoch) {
  if (!sink_->composes_pixel_plans()) {
    source_->share_pixels(false);
    return false;
  }
  std::string why;
  if (!batcher_->collates_pixel_plans()) {
    why = stage_label(stages_[stages_.size() - 2]) + " does not batch planned pixels";
  } else {
    for (std::size_t i = 0; i < augmentations_.size() && why.empty(); ++i) {
      const char* reason = augmentations_[i]->plan_support();
      if (reason != nullptr) why = stage_label(stages_[1 + i]) + ": " + (*reason ? reason : "it cannot plan its pixels");
    }
  }
  if (!why.empty() && options_.require_pixel_plans) {
    throw InvalidInput("augment_on device: epoch " + std::to_string(epoch + 1) +
                       " cannot compose its augmentations on the training device: " + why +
                       " (augment_on auto makes them on the CPU workers)");
  }
  const std::string note = why.empty() ? "augmentations composed on the training device (the CPU workers decode, "
                                         "draw and move the annotations)"
                                       : "augmentations made by the CPU workers: " + why;
  source_->share_pixels(why.empty());
  if (note != plan_note_) {
    YF_LOG_INFO("epoch " << epoch + 1 << ": " << note);
    plan_note_ = note;
  }
  return why.empty();
}

std::size_t GraphRunner::max_in_flight_for(std::int64_t batch_size) const {
  if (pipeline_.max_in_flight > 0) return static_cast<std::size_t>(pipeline_.max_in_flight);
  // The sink holds the batch it is consuming and the next one waits, collated, in its queue:
  // a third batch in the making plus two samples per worker keep every worker busy meanwhile.
  // (With two batches, the workers were down to 2 * workers samples whenever the sink was
  // busy, and the GPU waited ~4 ms of each 27 ms step: bench/gpu/compare-ultralytics.sh n32.)
  return static_cast<std::size_t>(3 * std::max<std::int64_t>(1, batch_size) + 2 * workers_);
}

void GraphRunner::call_sink(int epoch, const char* what, const std::function<void()>& fn) {
  const Stage& sink_stage = stages_.back();
  // "at the end of epoch 3" (1-based, as every progress line counts).
  const std::string when = std::string(std::string(what) == "begin_epoch"   ? "at the start of epoch "
                                       : std::string(what) == "end_epoch" ? "at the end of epoch "
                                                                          : "when stopping in epoch ") +
                           std::to_string(epoch + 1);
  try {
    fn();
  } catch (const Error& e) {
    throw Error(stage_label(sink_stage) + " failed " + when + ": " + e.what(), e.exit_code());
  } catch (const std::exception& e) {
    throw Error(stage_label(sink_stage) + " failed " + when + ": " + e.what());
  } catch (...) {
    throw Error(stage_label(sink_stage) + " failed " + when + ": unknown exception");
  }
}

void GraphRunner::configure_stage(Stage& s, json params, int epoch) {
  if (s.external) return;  // its owner configures it
  const int imgsz = pipeline_.imgsz(epoch, control_->epochs());
  std::map<std::string, double> schedule;
  if (s.component == sink_) schedule = scheduled_values(epoch);
  if (s.configured && params == s.last_params && imgsz == s.last_imgsz && schedule == s.last_schedule) return;
  if (s.configured) {
    YF_LOG_DEBUG("epoch " << epoch << ": reconfiguring stage '" << s.spec->name << "'");
  }
  configure_component(*s.component, *s.spec->component, params, s.spec->path(), context(s.spec->name, epoch),
                      "stage '" + s.spec->name + "'");
  s.configured = true;
  s.last_params = std::move(params);
  s.last_imgsz = imgsz;
  s.last_schedule = std::move(schedule);
}

EpochStats GraphRunner::run_epoch(int epoch, std::uint64_t first_sequence) {
  prepare(epoch);
  EpochStats stats;
  stats.epoch = epoch;
  const std::int64_t batch_size = batcher_->batch_size();
  const std::size_t limit = max_in_flight_for(batch_size);
  if (batch_size > 0 && limit < static_cast<std::size_t>(batch_size)) {
    // The batcher would wait for samples the limiter never lets through.
    throw InvalidInput("max_in_flight (" + std::to_string(limit) + ") is smaller than the batch size (" +
                       std::to_string(batch_size) + ") of epoch " + std::to_string(epoch) +
                       ": a batch could never fill; raise max_in_flight or set it to 0 (automatic)");
  }
  stats.max_in_flight = limit;

  // Data parallel: this rank's share of the order; `sequence` stays the position in the
  // whole order, so a sample gets the same augmentation whichever rank loads it.
  const dist::DistEnv& denv = dist::current_env();
  const std::vector<std::size_t> whole_order = epoch_order(source_->size(), pipeline_.shuffle, pipeline_.seed, epoch);
  const std::vector<ShardSlot> order = shard_order(whole_order, denv.rank, denv.world_size, first_sequence);
  // A mosaic's other images come from the samples loaded just before (AugmentContext::recent),
  // which continue into the previous epoch's last ones.
  const std::vector<std::size_t> previous_order =
      epoch > 0 ? epoch_order(source_->size(), pipeline_.shuffle, pipeline_.seed, epoch - 1) : std::vector<std::size_t>{};

  control_->epoch_started();
  call_sink(epoch, "begin_epoch", [&] { sink_->begin_epoch(epoch); });
  const auto start = std::chrono::steady_clock::now();
  PassCounts counts;
  run_pass(epoch, order, whole_order, previous_order, limit, start, stats, counts);
  return finish_epoch(epoch, start, stats, counts);
}

EpochStats GraphRunner::run_planned(int epoch, const std::vector<PlannedBatch>& plan) {
  prepare(epoch);
  EpochStats stats;
  stats.epoch = epoch;
  const std::int64_t batch_size = batcher_->batch_size();
  std::size_t largest = 0;
  for (const auto& b : plan) {
    largest = std::max(largest, b.indices.size());
    for (std::size_t i : b.indices) {
      if (i >= source_->size()) {
        throw Error("planned batch names sample " + std::to_string(i) + " of a source of " +
                    std::to_string(source_->size()));
      }
    }
    for (const auto& [name, params] : b.stage_params) (void)pipeline_.stage(name);  // throws for an unknown stage
  }
  if (batch_size > 0 && largest > static_cast<std::size_t>(batch_size)) {
    throw Error("a planned batch of " + std::to_string(largest) + " samples exceeds the batcher's batch of " +
                std::to_string(batch_size));
  }
  const std::size_t limit = std::max<std::size_t>(max_in_flight_for(batch_size), largest);
  stats.max_in_flight = limit;

  control_->epoch_started();
  call_sink(epoch, "begin_epoch", [&] { sink_->begin_epoch(epoch); });
  const auto start = std::chrono::steady_clock::now();
  PassCounts counts;
  std::vector<std::size_t> planned_order;  // the whole epoch's order, as sequences count it
  for (const auto& b : plan) planned_order.insert(planned_order.end(), b.indices.begin(), b.indices.end());
  std::uint64_t sequence = 0;
  for (const auto& b : plan) {
    if (control_->pass_stopping()) break;
    for (auto& s : stages_) {
      json params = pipeline_.stage_params(s.spec->name, epoch, control_->epochs());
      const auto it = b.stage_params.find(s.spec->name);
      if (it != b.stage_params.end()) params.merge_patch(it->second);
      configure_stage(s, std::move(params), epoch);
    }
    std::vector<ShardSlot> order;
    for (std::size_t i : b.indices) order.push_back(ShardSlot{i, sequence++});
    run_pass(epoch, order, planned_order, {}, limit, start, stats, counts);
  }
  return finish_epoch(epoch, start, stats, counts);
}

EpochStats GraphRunner::finish_epoch(int epoch, std::chrono::steady_clock::time_point start, EpochStats& stats,
                                     const PassCounts& counts) {
  stats.interrupted = stop_requested();
  stats.ended_early = !stats.interrupted && control_->epoch_ending();
  if (stats.interrupted) {
    call_sink(epoch, "interrupted", [&] { sink_->interrupted(epoch); });
  } else {
    const auto end_start = std::chrono::steady_clock::now();
    call_sink(epoch, "end_epoch", [&] { sink_->end_epoch(epoch); });
    stats.end_seconds = seconds_since(end_start);
  }
  stats.seconds = seconds_since(start);
  stats.samples = counts.samples;
  stats.batches = counts.batches;
  stats.images_per_second = stats.seconds > 0 ? static_cast<double>(counts.samples) / stats.seconds : 0;
  stats.peak_in_flight = counts.peak_in_flight;
  std::sort(stats.skipped.begin(), stats.skipped.end(),
            [](const SkippedSample& a, const SkippedSample& b) { return a.index < b.index; });
  history_.push_back(stats);
  return stats;
}

void GraphRunner::run_pass(int epoch, const std::vector<ShardSlot>& order, const std::vector<std::size_t>& whole_order,
                           const std::vector<std::size_t>& previous_order, std::size_t limit,
                           std::chrono::steady_clock::time_point start, EpochStats& stats, PassCounts& counts) {
  const int imgsz = pipeline_.imgsz(epoch, control_->epochs());
  const std::int64_t batch_size = batcher_->batch_size();
  // The decoded images of the samples loaded last are kept for as long as a mosaic can draw
  // them, plus the samples in flight.
  const std::size_t recent_window = core::recent_window(source_->size(), batch_size);
  const json recent_key = {imgsz, stages_.front().last_params, recent_window + limit};
  if (recent_key != recent_key_) {
    recent_images_.reset(recent_window + limit);
    recent_key_ = recent_key;
  }

  PassPlan plan{order, whole_order, previous_order};
  plan.epoch = epoch;
  plan.imgsz = imgsz;
  plan.epoch_seed = core::epoch_seed(pipeline_.seed, epoch);
  plan.limit = limit;
  plan.recent_window = recent_window;
  plan.workers = workers_;
  plan.ordered = pipeline_.ordered;
  plan.world_size = dist::current_env().world_size;
  PassStages parts{*source_, *batcher_, recent_images_};
  for (auto& a : augmentations_) parts.chain.push_back(a.get());
  parts.fields = chain_fields(pipeline_);
  parts.label = [this](std::size_t stage) { return stage_label(stages_[stage]); };
  parts.batcher_stage = stages_.size() - 2;
  parts.plan_pixels = plan_pixels_;
  parts.source_images = options_.source_images;
  parts.source_images_key = json{imgsz, stages_.front().last_params}.dump();
  // The pass stops taking samples, and drains, for a stop of the run and for an epoch ended early.
  parts.stop_requested = [this] { return control_->pass_stopping(); };
  parts.consume = [&, this](Batch& batch) { consume_batch(epoch, batch, start, stats, counts); };

  run_graph_pass(plan, parts, stats, counts.next_batch_index, counts.peak_in_flight);
}

void GraphRunner::consume_batch(int epoch, Batch& batch, std::chrono::steady_clock::time_point start, EpochStats& stats,
                                PassCounts& counts) {
  if (counts.batches == 0) stats.first_batch_seconds = seconds_since(start);
  try {
    sink_->consume(batch);
  } catch (const std::exception& e) {
    throw Error(stage_label(stages_.back()) + " failed on batch " + std::to_string(batch.index) + " of epoch " +
                std::to_string(epoch) + ": " + e.what());
  } catch (...) {
    throw Error(stage_label(stages_.back()) + " failed on batch " + std::to_string(batch.index) + " of epoch " +
                std::to_string(epoch) + ": unknown exception");
  }
  counts.samples += static_cast<std::size_t>(batch.size);
  ++counts.batches;
}

}  // namespace yoloflow::core
