#pragma once
// Runs a validated linear pipeline as a oneTBB flow graph, one epoch at a time:
//
//   input_node (epoch order) -> limiter_node (max_in_flight) -> function_node x workers
//   (source.load + augmentations) -> [sequencer_node when ordered] -> batcher (serial)
//   -> async_node -> sink, on the calling thread -> back to the limiter's decrement port
//
// Backpressure is structural: a sample passes the limiter before it is loaded and is
// released only after the sink consumed its batch (or when it was skipped), so at most
// max_in_flight samples are alive whatever the speeds of the stages. A sample whose load
// throws is skipped and named in the epoch's statistics; an exception from any other
// plugin code stops the epoch and is rethrown as a yoloflow::Error naming the stage, the
// plugin, its library and the sample.
#include <atomic>
#include <chrono>
#include <functional>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/graph/epoch_order.h"
#include "runtime/graph/epoch_stats.h"
#include "runtime/graph/recent_images.h"
#include "runtime/graph/run_control.h"
#include "runtime/graph/source_image_store.h"
#include "runtime/pipeline/pipeline.h"
#include "runtime/plugin/registry.h"
#include "yoloflow/augmentation.h"
#include "yoloflow/batcher.h"
#include "yoloflow/monitor.h"
#include "yoloflow/sink.h"
#include "yoloflow/source.h"

namespace yoloflow::core {

// One batch of an epoch whose batches are given (GraphRunner::run_planned): the source indices
// it is made of, in order, and parameters its stages take for it, merged over the pipeline's
// (a rectangular validation batch's shape, as its transform's `height` and `width`).
struct PlannedBatch {
  std::vector<std::size_t> indices;
  std::map<std::string, json> stage_params;  // stage name -> parameters to set for this batch
};

struct RunnerOptions {
  std::string run_dir;  // StageContext::run_dir
  std::string device;   // StageContext::device; the pipeline's "device" when empty
  // The run's control (run_control.h), owned by the run's driver: its stop, its end of an
  // epoch and its planned epochs are obeyed here. Null: the runner keeps its own over the
  // pipeline's epochs and `stop_flag`.
  RunControl* control = nullptr;
  // Polled between samples; set by a signal handler. Read through the runner's own control.
  const std::atomic<bool>* stop_flag = nullptr;
  int first_epoch = 0;  // the epoch components are configured for at construction
  // A sink its owner made and configures, consuming the batches in place of the pipeline's
  // last stage (which is then not made): the trainer's step, a validation's sink. Null: the
  // runner makes and configures the last stage's component.
  Sink* sink = nullptr;
  // The sink composes planned pixels (Sink::composes_pixel_plans) and must get them: a chain
  // that cannot plan its pixels is refused (InvalidInput) rather than run on the CPU workers.
  bool require_pixel_plans = false;
  // Where the sink keeps decoded source images (not owned; null: nowhere): while the chain plans
  // its pixels, a sample kept there is not loaded from the source again (source_image_store.h).
  SourceImageStore* source_images = nullptr;
};

class GraphRunner {
 public:
  // Creates every stage's component and the monitors, and configures the stages for
  // options.first_epoch. Throws yoloflow::Error naming the stage when a plugin fails.
  // `pipeline` and `registry` are referenced, not copied: they must outlive the runner.
  GraphRunner(const Pipeline& pipeline, const Registry& registry, RunnerOptions options = {});
  ~GraphRunner();
  GraphRunner(const GraphRunner&) = delete;
  GraphRunner& operator=(const GraphRunner&) = delete;

  // Runs one epoch (0-based) to its end, or until a stop is requested (then drains: every
  // full batch already assembled reaches the sink, a partial one is dropped, and the sink's
  // interrupted() is called instead of end_epoch). `first_sequence` continues an epoch
  // where a resumed run stopped: positions before it in the epoch's order are not loaded.
  EpochStats run_epoch(int epoch, std::uint64_t first_sequence = 0);
  // Runs one epoch made of the given batches instead of the pipeline's order (validation's
  // batches sorted by aspect ratio): each planned batch reaches the sink as one batch (the
  // batcher is flushed after it; its size must not exceed the batcher's), in the order given,
  // with the stages it names reconfigured for it. The sink sees one begin_epoch and one
  // end_epoch around them all, and consumes each batch on the calling thread once the batch's
  // samples are loaded (a sink that keeps per-thread state, as CUDA streams and cuBLAS
  // workspaces are, sees one thread). The stages get the pipeline's parameters back at the next
  // prepare() or run_epoch().
  EpochStats run_planned(int epoch, const std::vector<PlannedBatch>& plan);
  // (Re)configures components whose resolved parameters or image size differ at `epoch`, and
  // decides whether the epoch's pixels are planned (pixels_planned()).
  void prepare(int epoch);
  // Whether the augmentations describe their pixel work for the sink to compose
  // (yoloflow/pixel_plan.h): the sink composes plans, the batcher collates them and every
  // augmentation, as configured for the prepared epoch, can plan.
  bool pixels_planned() const { return plan_pixels_; }

  // The control this runner obeys (RunnerOptions::control or its own). A stop: the runner
  // emits no more samples and the running epoch drains. An epoch ended early
  // (RunControl::end_epoch_early): what the sink is consuming finishes, batches already
  // assembled and the last partial one are dropped, and the sink's end_epoch follows (not
  // interrupted); the next run_epoch or run_planned starts afresh. (A time budget ends its last
  // epoch so.)
  RunControl& control() { return *control_; }
  // Thread-safe and async-signal-safe: stop emitting samples; the running epoch drains.
  void request_stop() { control_->stop_now(); }
  // Why a stage asked to stop (RunReporter::request_stop), "" when it did not.
  std::string stop_reason() const { return control_->stop_reason(); }
  bool stop_requested() const { return control_->stop_requested(); }
  void end_epoch_early() { control_->end_epoch_early(); }

  const Pipeline& pipeline() const { return pipeline_; }
  DataSource& source() { return *source_; }
  Batcher& batcher() { return *batcher_; }
  Sink& sink() { return *sink_; }
  std::size_t augmentation_count() const { return augmentations_.size(); }
  Augmentation& augmentation(std::size_t i) { return *augmentations_.at(i); }
  // Monitors are created here (before the stages, so stages may report while configuring).
  // Step events reach them through the stages' StageContext::reporter; run and epoch
  // events are sent by whoever drives the run.
  std::vector<std::unique_ptr<Monitor>>& monitors() { return monitors_; }
  // The values stages reported for the current epoch (RunReporter::epoch_values), cleared.
  std::map<std::string, double> take_epoch_values();
  int workers() const { return workers_; }
  // The workers a runner of `pipeline` uses on this machine (its `workers`, at most the threads
  // the machine runs at once; 0: all of them), known before the runner is built.
  static int workers_for(const Pipeline& pipeline);
  // The limit for `epoch` (resolves 0 = automatic with that epoch's batch size).
  std::size_t max_in_flight_for(std::int64_t batch_size) const;
  const std::vector<EpochStats>& history() const { return history_; }
  StageContext context(const std::string& node, int epoch) const;
  // StageContext::schedule for `epoch`.
  std::map<std::string, double> scheduled_values(int epoch) const;

 private:
  struct Stage {
    const StageSpec* spec = nullptr;
    Component* component = nullptr;
    bool configured = false;
    bool external = false;  // RunnerOptions::sink: configured by its owner
    json last_params;
    int last_imgsz = 0;
    std::map<std::string, double> last_schedule;  // compared for the sink only
  };
  std::string stage_label(const Stage& s) const;
  // What one pass of the flow graph counts; an epoch is one pass, a planned epoch one per batch.
  struct PassCounts {
    std::size_t samples = 0, batches = 0, peak_in_flight = 0;
    std::int64_t next_batch_index = 0;
  };
  // Runs `order` through the flow graph, then the batcher's last partial batch to the sink
  // (unless stopped); no begin_epoch/end_epoch. The graph runs on its own threads; the sink
  // consumes each batch on the calling thread.
  void run_pass(int epoch, const std::vector<ShardSlot>& order, const std::vector<std::size_t>& whole_order,
                const std::vector<std::size_t>& previous_order, std::size_t limit,
                std::chrono::steady_clock::time_point start, EpochStats& stats, PassCounts& counts);
  // The sink consumes `batch` (the first one sets stats.first_batch_seconds); its exception
  // becomes an Error naming the stage and batch.
  void consume_batch(int epoch, Batch& batch, std::chrono::steady_clock::time_point start, EpochStats& stats,
                     PassCounts& counts);
  // The sink's end_epoch (or interrupted) and the epoch's statistics.
  EpochStats finish_epoch(int epoch, std::chrono::steady_clock::time_point start, EpochStats& stats,
                          const PassCounts& counts);
  void call_sink(int epoch, const char* what, const std::function<void()>& fn);
  // Configures stage `s` with `params` at `epoch` when they differ from what it has.
  // Whether the prepared epoch's pixels can be planned; logs the choice when it changes.
  bool decide_pixel_plans(int epoch);
  void configure_stage(Stage& s, json params, int epoch);

  const Pipeline& pipeline_;
  const Registry& registry_;
  RunnerOptions options_;
  int workers_ = 1;
  std::unique_ptr<RunControl> own_control_;  // without RunnerOptions::control
  RunControl* control_ = nullptr;
  std::unique_ptr<DataSource> source_;
  std::vector<std::unique_ptr<Augmentation>> augmentations_;
  std::unique_ptr<Batcher> batcher_;
  std::unique_ptr<Sink> owned_sink_;  // null with RunnerOptions::sink
  Sink* sink_ = nullptr;
  std::vector<std::unique_ptr<Monitor>> monitors_;
  class Reporter;
  std::unique_ptr<Reporter> reporter_;
  std::vector<Stage> stages_;  // source, augmentations..., batcher, sink
  bool plan_pixels_ = false;
  std::string plan_note_;  // the last choice logged
  std::vector<EpochStats> history_;
  // The source's samples loaded last, for mosaics' other images; kept across epochs while the
  // source's parameters and image size stay the same (recent_key_).
  RecentImages recent_images_;
  json recent_key_;
};

}  // namespace yoloflow::core
