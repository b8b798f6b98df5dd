#include "training/trainer/trainer.h"

#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <ostream>

#include <oneapi/tbb/info.h>
#include <torch/torch.h>

#include "log/logging.h"
#include "training/parallel/data_parallel.h"
#include "runtime/graph/graph_runner.h"
#include "runtime/pipeline/component_origin.h"
#include "runtime/pipeline/pipeline.h"
#include "runtime/run/epoch_loop.h"
#include "runtime/run/run_driver.h"
#include "runtime/util/process_clock.h"
#include "runtime/util/text_format.h"
#include "training/components/batch_targets.h"
#include "training/compose/augment_placement.h"
#include "training/checkpoint/checkpoint.h"
#include "training/checkpoint/checkpoint_writer.h"
#include "training/device/cuda_memory.h"
#include "training/trainer/epoch_report.h"
#include "training/trainer/fitness_tracker.h"
#include "training/trainer/labels_plot.h"
#include "training/trainer/frozen_layers.h"
#include "training/trainer/multi_scale.h"
#include "training/trainer/optimizer_schedule.h"
#include "training/trainer/precision_plan.h"
#include "training/trainer/scheduled_loss.h"
#include "training/trainer/step_engine.h"
#include "training/trainer/step_profile.h"
#include "training/trainer/rect_training.h"
#include "training/trainer/time_budget.h"
#include "training/trainer/train_callbacks.h"
#include "training/trainer/train_checkpoints.h"
#include "training/device/train_device.h"
#include "training/trainer/train_progress.h"
#include "training/trainer/train_setup.h"
#include "training/trainer/train_sink_checks.h"
#include "training/trainer/train_sink_schema.h"
#include "training/trainer/train_state.h"
#include "training/trainer/ema_callback.h"
#include "training/trainer/training_parts.h"
#include "training/eval/val_plots.h"
#include "training/eval/validation_pipeline.h"
#include "training/device/device_choice.h"
#include "yoloflow/error.h"
#include "yoloflow/log.h"
#include "yoloflow/sink.h"
#include "yoloflow/training_view.h"
#include "yoloflow/version.h"

namespace yoloflow::core {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

constexpr const char* kName = "train";

class Trainer final : public RunDriver, private TrainingView {
 public:
  Trainer(const Pipeline& pipeline, const Registry& registry, const RunOptions& options);

  std::string nothing_to_run() const override { return nothing_to_run_; }
  bool resumable() const override { return true; }
  RunOutcome run(std::ostream& out) override;
  GraphRunner& graph() override { return *runner_; }
  std::string summary() const override {
    if (!report_) return "";  // not rank 0
    return report_->summary(state_.total_seconds, validated_ ? &last_metrics_ : nullptr);
  }

 private:
  // The graph's consumer: each batch one training step, on the thread that runs the epoch.
  class StepSink final : public Sink {
   public:
    explicit StepSink(Trainer& trainer) : trainer_(trainer) {}
    void begin_epoch(int epoch) override { trainer_.begin_epoch(epoch); }
    void consume(Batch& batch) override { trainer_.train_batch(batch); }
    void end_epoch(int) override { trainer_.finish_accumulation(); }
    // A stop mid-epoch: the trainer's loop saves where it stopped.
    void interrupted(int) override {}
    // On a GPU, batches are collated straight into pinned memory (cuda_memory.h says why).
    PixelAllocator pixel_allocator() override { return pinned_pixel_allocator(trainer_.device_); }
    // augment_on: the augmentations' pixels composed here, on the training device.
    bool composes_pixel_plans() const override { return trainer_.placement_ && trainer_.placement_->on_device(); }

   private:
    Trainer& trainer_;
  };

  // Building, in the order the parts need each other.
  void build(const Registry& registry);
  // The scheduled values of `epoch` (the loss's gains, imgsz, the stage's schedules).
  void at_epoch(int epoch);
  // precision_schedule: the strategy of `epoch` made current (precision_plan.h).
  void use_precision(int epoch);

  // The epoch, batch by batch (StepSink).
  void begin_epoch(int epoch);
  void train_batch(Batch& batch);
  void finish_accumulation();
  // After the epoch's batches: validation, callbacks, checkpoint, results (rank 0).
  void end_of_epoch(int epoch);
  ValidationResult validate();

  // TrainingView: what a callback's tensor hooks see.
  torch::nn::Module& model() override { return model_->module(); }
  const std::vector<ParamGroup>& param_groups() const override {
    static const std::vector<ParamGroup> kNone;
    return optimizer_ ? optimizer_->groups() : kNone;
  }
  TrainProgress progress() const override {
    return train_progress(state_, ctx_.epochs, schedule_->batches_per_epoch());
  }

  void reset_loss_sum(const torch::Tensor& values);
  void set_batch(std::int64_t batch);
  void setup_optimizer(std::int64_t batch);
  void act_mid_epoch(const CallbackRequests& r);
  // The time budget (time_budget.h): within an epoch, after each batch; after it, the plan.
  void check_time_budget();
  void plan_epochs(int epoch);
  // train_rect: the epoch in rectangular batches (rect_training.h), planned again when the
  // epoch's imgsz or batch size differs from the plan's.
  EpochStats run_rect_epoch(int epoch, std::uint64_t first_sequence);
  void stop(const std::string& reason);
  void end_training();
  void log_progress();
  void show_status();
  void report_first_step();
  // Writes the run's state to `files` in the weights folder (rank 0); `after` runs once they
  // are on disk.
  void save(const std::vector<std::string>& files, bool mid_epoch, double fitness, std::function<void()> after = nullptr);
  TrainingParts parts() const { return {*model_, optimizer_.get(), *precision_}; }

  // The trainer's own copy: a time budget's plan sets its `epochs`, so that schedules counted
  // from the end (close_mosaic's "-10") and the graph's stage parameters follow the plan, as
  // Ultralytics closes mosaic relative to the epochs it estimates.
  Pipeline pipeline_;
  RunOptions options_;
  const StageSpec& stage_;
  std::string nothing_to_run_;
  std::unique_ptr<Checkpoint> resume_;  // kept while a resumed run has not passed its first epoch
  std::string resume_path_;
  int first_epoch_ = 0;
  std::uint64_t first_sequence_ = 0;

  Params p_;
  StageContext ctx_;  // the stage's, at the current epoch
  torch::Device device_{torch::kCPU};
  StepSink step_sink_{*this};
  std::unique_ptr<GraphRunner> runner_;
  std::unique_ptr<TrainingPartsBuilder> builder_;
  std::unique_ptr<Model> model_;
  FrozenLayers frozen_;  // the `freeze` layers
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<PrecisionStrategy> precision_;
  PrecisionPlan precision_plan_;
  json precision_spec_;  // precision_'s
  std::string precision_key_;  // precision_spec_ in a captured graph's key, made once per switch
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<OptimizerSchedule> schedule_;
  std::unique_ptr<ScheduledLoss> loss_;
  std::unique_ptr<BatchTargets> targets_;
  std::unique_ptr<dist::DataParallel> dp_;
  std::unique_ptr<ValidationPipeline> validation_;
  std::unique_ptr<EpochReport> report_;   // rank 0 only
  // The plots of the run's last validation (plots=true, rank 0): fed by every validation,
  // written when the run ends.
  std::unique_ptr<ValPlots> val_plots_;
  std::unique_ptr<StepProfile> profile_;  // rank 0 only
  std::unique_ptr<StepEngine> engine_;
  std::unique_ptr<AugmentPlacement> placement_;  // where the augmented pixels are made (augment_on)
  std::size_t eager_steps_before_ = 0, replays_before_ = 0;  // the captured step's counts when the epoch began
  TrainCallbacks callbacks_;              // rank 0 only
  TrainState state_;
  std::unique_ptr<CheckpointWriter> checkpoints_;
  std::vector<std::string> rect_stages_;  // train_rect: the stages given each batch's shape
  RectTrainingPlan rect_plan_;
  std::vector<std::string> names_;
  json model_spec_;  // {"plugin", "params"} as built, nc resolved
  std::string run_dir_;
  ShownValidation last_metrics_;
  bool validated_ = false;  // last_metrics_ holds a validation of this process
  Clock::time_point epoch_start_ = Clock::now(), last_batch_end_ = Clock::now();
  std::int64_t steps_this_process_ = 0;
  // The startup timeline, in seconds since the process started (a user's wait for training).
  double built_at_ = -1.0, first_batch_at_ = -1.0;
  bool first_step_reported_ = false;
  ProgressWindow window_;  // host times between progress lines
  bool first_batch_of_epoch_ = true;
  bool budget_spent_ = false;  // a stop was requested: the batches still arriving are left
  bool ended_ = false;         // on_train_end was called
  std::string pending_stop_;   // data parallel: a callback's stop, taken at the epoch's end
  int step_size_ = 0;          // multi-scale: this batch's image size (0 = as collated)
  int shown_size_ = 0;         // this batch's image size as trained (multi-scale's, else its longer side)
  std::int64_t batch_instances_ = -1;  // this batch's labelled instances
  NamedLosses shown_losses_;           // the last progress line's, for the terminal's bar
  Clock::time_point status_drawn_{};
  TimeBudget budget_;          // `time`; off at 0
  bool epoch_cut_ = false;     // the time budget ended this epoch early: it is the run's last
  double last_end_seconds_ = 0.0;  // the previous epoch's end (validation, checkpoint)
};

Trainer::Trainer(const Pipeline& pipeline, const Registry& registry, const RunOptions& options)
    : pipeline_(pipeline), options_(options), stage_(pipeline_.stage(pipeline_.sink)) {
  // A resumed run: its checkpoint read once, before anything is built.
  const json first_params = pipeline.stage_params(stage_.name, 0);
  resume_path_ = !options.resume_checkpoint.empty() ? options.resume_checkpoint : first_params.value("resume", std::string());
  if (!resume_path_.empty()) {
    resume_ = std::make_unique<Checkpoint>(load_checkpoint(resume_path_));
    if (deployable_only(*resume_)) {
      throw InvalidInput(resume_path_ + " holds the weights to deploy only (a run's best.pt: float16 EMA, no optimizer "
                         "state); resume from the run's last.pt, or fine-tune from this file with model=" + resume_path_);
    }
    first_epoch_ = resume_->epoch;
    first_sequence_ = resume_->next_sequence;
    // With a time budget the epochs are the budget's: a resumed run trains it afresh.
    if (first_epoch_ >= pipeline.epochs && !(first_params.value("time", 0.0) > 0.0)) {
      nothing_to_run_ = resume_path_ + " finished all " + std::to_string(pipeline.epochs) +
                        " epochs; to train longer, pass a larger count: epochs=" + std::to_string(pipeline.epochs + 10);
      return;
    }
  }
  p_ = Params(pipeline.stage_params(stage_.name, first_epoch_), stage_.path() + ".params");
  state_.micro_batch = p_.get_int("micro_batch");
  budget_ = TimeBudget(p_.get_float("time"));
  // A resumed budget run continues the schedule it planned last, until it plans again.
  if (resume_ && budget_.on()) pipeline_.epochs = std::max(resume_->meta.value("epochs", pipeline.epochs), first_epoch_ + 1);
  // Choosing the device counts devices but creates no CUDA context; the allocator reads its
  // configuration when the first one is created, so it is set before anything else.
  const std::string device = p_.get_string("device").empty()
                                 ? (options.device.empty() ? pipeline.device : options.device)
                                 : p_.get_string("device");
  device_ = dist::rank_device(pick_device(device, p_.where() + ".device"));
  apply_cuda_alloc_conf(p_.get_string("cuda_alloc_conf"), p_.where() + ".cuda_alloc_conf", device_);
  set_training_threads(device_, p_.get_int("cpu_threads"));
  set_cuda_memory_fraction(device_, p_.get_float("cuda_memory_fraction"));
  const std::string augment_on = p_.get_string("augment_on");
  const int cores = std::max(1, tbb::info::default_concurrency());  // as the graph runner counts them
  placement_ = std::make_unique<AugmentPlacement>(augment_on, device_,
                                                  pipeline.workers > 0 ? std::min(pipeline.workers, cores) : cores,
                                                  PixelComposer::composes_on(device_));
  // The data path first: its stages read their data here, and their failures name them.
  RunnerOptions ro;
  ro.require_pixel_plans = augment_on == "device";
  ro.run_dir = options.run_dir;
  ro.device = device_.str();
  ro.stop_flag = options.stop_flag;
  ro.first_epoch = first_epoch_;
  ro.sink = &step_sink_;
  runner_ = std::make_unique<GraphRunner>(pipeline_, registry, ro);
  const double data_built_at = seconds_since_process_start();
  // The rest is the train stage's own: failures say so, as a stage's configure would.
  try {
    build(registry);
  } catch (const Error& e) {
    throw Error(component_origin(*stage_.component, "stage '" + stage_.name + "'").text() + " failed to configure: " +
                    e.what(),
                e.exit_code());
  } catch (const std::exception& e) {
    throw Error(component_origin(*stage_.component, "stage '" + stage_.name + "'").text() + " failed to configure: " +
                e.what());
  }
  built_at_ = seconds_since_process_start();
  YF_LOG_DEBUG("train: data path built " << format_fixed(data_built_at, 2) << " s after the process started, the rest "
                                          << format_fixed(built_at_, 2) << " s");
}

void Trainer::build(const Registry& registry) {
  ctx_ = runner_->context(stage_.name, first_epoch_);
  ctx_.device = device_.str();
  torch::manual_seed(ctx_.seed);
  validation_ = open_training_validation(registry, p_, ctx_);
  names_ = validation_->names();
  builder_ = std::make_unique<TrainingPartsBuilder>(registry, p_, ctx_);
  model_spec_ = builder_->model_spec(names_);
  model_ = builder_->model(names_, /*initial_weights=*/resume_ == nullptr);
  frozen_ = builder_->freeze(*model_);
  if (resume_) {
    // The optimizer's state is per trained parameter: a resumed run trains the same ones.
    const auto was = resume_->meta.value("freeze", std::vector<std::int64_t>{});
    if (was != frozen_.layers()) {
      throw InvalidInput(p_.where() + ".freeze: " + (frozen_.layers().empty() ? "none" : layer_list_text(frozen_.layers())) +
                         " here, but " + resume_path_ + " trained with " + (was.empty() ? "none" : layer_list_text(was)) +
                         " frozen; a resumed run keeps its frozen layers. To freeze others, start a new run from its "
                         "weights (weights=" + resume_path_ + ")");
    }
  }
  run_dir_ = ctx_.run_dir.empty() ? std::string("runs/train") : ctx_.run_dir;
  checkpoints_ = std::make_unique<CheckpointWriter>(p_.get_bool("save_async"));
  // The strategy of the epoch the run starts in: a resumed run's may be a scheduled one, whose
  // state its checkpoint holds.
  precision_plan_ = PrecisionPlan(p_.get_json("precision"), p_.get_json("precision_schedule"));
  use_precision(resume_ ? resume_->epoch : 0);
  scheduler_ = builder_->scheduler();
  set_cuda_kernels(device_, p_.get_bool("cudnn_benchmark"), p_.get_bool("tf32"));
  model_->module().to(device_);
  frozen_.train(model_->module());
  dp_ = dist::DataParallel::attach(model_->module(), device_);  // null in a one-process run
  schedule_ = std::make_unique<OptimizerSchedule>(
      *scheduler_, WarmupOptions{p_.get_float("warmup_epochs"), p_.get_float("warmup_momentum"), p_.get_float("warmup_bias_lr")},
      p_.get_int("nominal_batch"), dp_ ? dp_->world_size() : 1, ctx_.epochs);
  loss_ = builder_->loss(model_->head());
  state_.loss_names = loss_->loss().item_names();
  targets_ = std::make_unique<BatchTargets>(builder_->target_rows());
  const std::string callbacks_path = p_.where() + ".callbacks";
  const json callbacks = callbacks_with_ema(p_.get_json("callbacks"), p_.get_bool("ema"), callbacks_path, p_.where() + ".ema");
  // Nothing is written into the run folder here: a run refused while it is being built (a
  // checkpoint of another model, data that cannot be read) leaves the folder as it was.
  if (dist::is_main_process()) {  // data parallel: rank 0 writes every output and runs the callbacks
    // The evaluator's columns are known now, before any validation: every row has them.
    report_ = std::make_unique<EpochReport>(
        run_dir_, p_.get_bool("plots"), results_columns(state_.loss_names, validation_->evaluator(model_->head()).columns()));
    if (p_.get_bool("plots")) val_plots_ = std::make_unique<ValPlots>(names_, p_.get_float("val_conf"));
    profile_ = std::make_unique<StepProfile>(run_dir_ + "/steps.csv", p_.get_int("profile_every"), [device = device_] {
      if (device.is_cuda()) torch::cuda::synchronize(device.index());
    });
    callbacks_ = TrainCallbacks(registry, callbacks, callbacks_path, ctx_);
  }
  engine_ = std::make_unique<StepEngine>(*model_, loss_->loss(), *precision_, dp_.get(), profile_.get(), device_,
                                         p_.get_float("clip_grad"), [this] { callbacks_.optimizer_step(*this); });
  if (resume_) {  // a checkpoint of this stage: same architecture and class count
    restore_train_checkpoint(*resume_, resume_path_, parts(), state_);
    if (report_) report_->resume(resume_->epoch);
    callbacks_.load_states(resume_->meta.value("callbacks", json::object()));
    callbacks_.load_tensors(callback_tensors(*resume_));
  }
  if (p_.get_bool("train_rect")) {
    rect_stages_ = rect_shape_stages(pipeline_);
    if (rect_stages_.empty()) {
      throw InvalidInput(p_.where() + ".train_rect: no augmentation stage of this pipeline takes a batch's shape as "
                         "`height` and `width` (random_perspective and letterbox do): add one before the batcher");
    }
    if (dist::current_env().world_size > 1) {
      throw InvalidInput(p_.where() + ".train_rect: rectangular batches train on one process; leave out train_rect or "
                         "run on one device");
    }
  }
  if (!rect_stages_.empty() && capture_requested(p_.get_json("cuda_graph"), device_)) {
    YF_LOG_INFO("train: rectangular batches change shape batch to batch; cuda_graph is not used, steps run eagerly");
  } else if (capture_requested(p_.get_json("cuda_graph"), device_)) {
    engine_->enable_capture_if_possible(p_.get_int("profile_every") > 0, static_cast<int>(p_.get_int("cuda_graph_warmup")),
                                        p_.get_json("cuda_graph").is_string());
    engine_->share_graph_pool(p_.get_bool("cuda_graph_shared_pool"));
  }
  YF_LOG_INFO("train: " << model_->architecture() << " on " << device_.str() << ", precision "
                        << precision_spec_.value("plugin", std::string()) << ", " << at::get_num_threads()
                        << " CPU thread" << (at::get_num_threads() == 1 ? "" : "s") << ", run folder " << run_dir_);
}

void Trainer::at_epoch(int epoch) {
  ctx_ = runner_->context(stage_.name, epoch);
  ctx_.device = device_.str();
  use_precision(epoch);
  StageContext loss_context = ctx_;
  loss_context.node = p_.where() + ".loss";
  loss_->at_epoch(pipeline_.stage_params(stage_.name, epoch).at("loss"), loss_context);
}

void Trainer::use_precision(int epoch) {
  std::string key;
  const json spec = precision_plan_.spec_at(epoch, ctx_.epochs, &key);
  if (precision_ && spec == precision_spec_) return;
  auto next = key.empty() ? builder_->precision(device_) : builder_->precision(device_, spec, "precision_schedule." + key);
  if (precision_) {
    YF_LOG_INFO("epoch " << epoch + 1 << ": precision " << precision_spec_.value("plugin", std::string()) << " -> "
                         << spec.value("plugin", std::string()) << " (precision_schedule)");
    engine_->set_precision(*next);
  }
  precision_ = std::move(next);
  precision_spec_ = spec;
  precision_key_ = "|" + spec.dump();
}

RunOutcome Trainer::run(std::ostream& out) {
  const RunEvent event = run_event(pipeline_, options_);
  for (auto& m : runner_->monitors()) m->on_run_start(event);
  out << (resume_ ? "resuming '" : "running '") << pipeline_.name << "': " << pipeline_.epochs << " epoch"
      << (pipeline_.epochs == 1 ? "" : "s") << (budget_.on() ? " or a time budget of " + budget_.text() : std::string()) << ", "
      << runner_->source().size() << " samples, " << runner_->workers()
      << " worker" << (runner_->workers() == 1 ? "" : "s") << (pipeline_.ordered ? ", ordered" : "") << std::endl;
  {
    CallbackRequests requests;
    callbacks_.train_start(TrainRun{run_dir_, names_, pipeline_.epochs, resume_ != nullptr}, requests);
    act_mid_epoch(requests);
  }
  // Ultralytics' labels.jpg when a run starts (not again on resume): the training labels, read
  // without decoding an image.
  if (p_.get_bool("plots") && !resume_ && dist::is_main_process()) {
    // A plot is worth a warning, never a failed run (a source's labels() that throws, a full disk).
    try {
      const LabelStatistics labels = collect_labels(runner_->source());
      if (labels.available) {
        write_labels_plot(labels, names_, run_dir_ + "/labels.jpg");
        YF_LOG_INFO("train: " << labels.classes.size() << " training labels plotted to " << run_dir_ << "/labels.jpg");
      } else {
        YF_LOG_INFO("train: no labels.jpg: stage '" << pipeline_.source
                                                    << "' (the data source) does not give its labels without decoding its images");
      }
    } catch (const std::exception& e) {
      YF_LOG_WARN("train: no labels.jpg: " << e.what());
    }
  }
  RunOutcome outcome;
  // The bar leaves the terminal however the run ends (an error line is printed in its place).
  struct StatusLineGuard {
    ~StatusLineGuard() { clear_status_line(); }
  } status_guard;
  budget_.start();
  // The epochs may change after each one (a time budget's plan).
  for (int epoch = first_epoch_; epoch < pipeline_.epochs && !runner_->stop_requested(); ++epoch) {
    at_epoch(epoch);
    const std::uint64_t from = epoch == first_epoch_ ? first_sequence_ : 0;
    EpochStats stats = rect_stages_.empty() ? runner_->run_epoch(epoch, from) : run_rect_epoch(epoch, from);
    clear_status_line();  // the epoch's bar: what follows is printed in its place
    outcome.samples += stats.samples;
    outcome.seconds += stats.seconds;
    if (stats.interrupted) {
      // Stopped after the batch in hand: last.pt continues from here.
      save({"last.pt"}, /*mid_epoch=*/true, -1.0);
      if (dist::is_main_process()) checkpoints_->wait();
      YF_LOG_INFO("stopped in epoch " << epoch + 1 << " after batch " << state_.step << "; saved " << run_dir_
                                      << "/weights/last.pt");
      report_epoch(*runner_, stats, pipeline_.epochs, {}, out);
      break;
    }
    const auto end_start = Clock::now();
    end_of_epoch(epoch);
    stats.end_seconds = seconds_since(end_start);
    last_end_seconds_ = stats.end_seconds;
    report_epoch(*runner_, stats, pipeline_.epochs, {}, out);
    ++outcome.epochs_done;
  }
  if (dist::is_main_process()) checkpoints_->wait();  // the run's files are complete when it ends
  end_training();
  outcome.epochs = pipeline_.epochs;
  outcome.interrupted = runner_->stop_requested();
  outcome.stop_reason = runner_->stop_reason();
  for (auto& m : runner_->monitors()) m->on_run_end(event);
  return outcome;
}

void Trainer::begin_epoch(int epoch) {
  frozen_.train(model_->module());  // after validation, which left every layer in train mode
  first_batch_of_epoch_ = true;
  epoch_cut_ = false;
  last_batch_end_ = Clock::now();
  if (resume_ && resume_->epoch == epoch) {
    // Continuing an epoch a previous process stopped in: keep its counters.
    const double seconds = resume_epoch(*resume_, state_);
    window_.restart(state_.step);
    epoch_start_ = Clock::now() - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    auto l = resume_->meta.value("epoch_loss_sum", std::vector<double>{});
    if (l.size() != state_.loss_names.size()) l.assign(state_.loss_names.size(), 0.0);
    reset_loss_sum(torch::tensor(std::vector<float>(l.begin(), l.end())));
    return;
  }
  if (const CapturedStep* c = engine_->captured()) {
    eager_steps_before_ = c->eager_steps();
    replays_before_ = c->replays();
  }
  state_.epoch = epoch;
  epoch_start_ = Clock::now();
  state_.oom_retries = 0;
  state_.step = 0;
  state_.images = 0;
  state_.next_sequence = 0;
  window_.restart(0);
  reset_loss_sum(torch::zeros({static_cast<std::int64_t>(state_.loss_names.size())}));
}

void Trainer::train_batch(Batch& batch) {
  // Batches already assembled when the run asked to stop are left for the resumed run.
  if (budget_spent_) return;
  // The last epoch's checkpoint could not be written (a full disk): stop here, where
  // last.pt and results.csv still agree, rather than train epochs that cannot be kept.
  if (checkpoints_->failed()) checkpoints_->wait();
  const auto t0 = Clock::now();
  const double waited = std::chrono::duration<double>(t0 - last_batch_end_).count();
  if (first_batch_at_ < 0.0) first_batch_at_ = seconds_since_process_start();
  if (!optimizer_) {
    setup_optimizer(batch.size);
  } else if (first_batch_of_epoch_ && batch.size != state_.batch) {
    set_batch(batch.size);  // a batch-size schedule changed it at this epoch boundary
  }
  first_batch_of_epoch_ = false;
  // Composed pixels are copied back for the pictures of an epoch's first batches only.
  placement_->waited(waited);
  const torch::Tensor pixels = batch_pixels(batch, placement_->composer(), state_.step < kPicturedBatches);
  CallbackRequests before;
  callbacks_.batch_start(batch, progress(), before);
  const std::int64_t ni = state_.step + schedule_->batches_per_epoch() * state_.epoch;  // iteration over the run
  schedule_->apply(state_.epoch, ni);
  const double multi_scale = p_.get_float("multi_scale");
  step_size_ = multi_scale > 0.0 ? multi_scale_size(static_cast<int>(std::max(batch.height, batch.width)), multi_scale,
                                                    static_cast<int>(largest_stride(model_->head())), ctx_.seed, ni)
                                 : 0;
  shown_size_ = step_size_ > 0 ? step_size_ : static_cast<int>(std::max(batch.height, batch.width));
  batch_instances_ = batch.has_target(targets::kBoxes) ? batch.boxes().rows() : -1;
  if (profile_) profile_->begin(state_.epoch, state_.step, state_.global_step, waited);

  const LossTargets targets = (*targets_)(batch, engine_->captured() != nullptr, state_.epoch, state_.step);
  // A captured graph bakes in the loss's parameters and the precision's autocast.
  engine_->train(state_, pixels, targets, batch.pixels, step_size_, schedule_->accumulate(),
                 loss_->key() + precision_key_);
  if (profile_) {
    profile_->end_phase(StepProfile::kOptimizer);
    profile_->end_step();
  }

  ++state_.step;
  ++steps_this_process_;
  if (!first_step_reported_ && state_.micro == 0) report_first_step();
  state_.images += batch.size;
  // The data position is global: W ranks in step have consumed every position below this
  // rank's last one plus W (ranks deal positions r, r+W, ...), whatever W the resume uses.
  const std::uint64_t world = dp_ ? static_cast<std::uint64_t>(dp_->world_size()) : 1;
  for (const auto& s : batch.samples) state_.next_sequence = std::max<std::uint64_t>(state_.next_sequence, s.sequence + world);
  window_.add(waited, seconds_since(t0));
  if (state_.step % p_.get_int("log_every") == 0 || state_.step == schedule_->batches_per_epoch()) log_progress();
  show_status();
  CallbackRequests after;
  callbacks_.batch_end(progress(), after);
  act_mid_epoch(before);
  act_mid_epoch(after);
  const std::int64_t budget = p_.get_int("max_steps");
  if (budget > 0 && steps_this_process_ >= budget) stop("max_steps: " + std::to_string(budget) + " batches trained in this process");
  if (!budget_spent_) check_time_budget();
  last_batch_end_ = Clock::now();
}

void Trainer::finish_accumulation() {
  // A resumed run that stopped after the epoch's last batch reaches here without a batch.
  if (!optimizer_) setup_optimizer(resume_ ? resume_->meta.value("batch", std::int64_t{16}) : 16);
  // Data parallel: a rank that skipped unreadable samples ran fewer batches; it takes the
  // missing steps with zero gradients so that its collectives still pair with the others'.
  // An epoch the time budget ended early ends where the ranks decided together.
  while (dp_ && !epoch_cut_ && state_.step < schedule_->batches_per_epoch()) {
    schedule_->apply(state_.epoch, state_.step + schedule_->batches_per_epoch() * state_.epoch);
    ++state_.step;
    if (++state_.micro >= schedule_->accumulate()) engine_->optimizer_step(state_);
    check_time_budget();  // as the ranks with this batch do
  }
  if (state_.micro > 0) engine_->optimizer_step(state_);  // the epoch's last partial accumulation
  engine_->log_capture_counts();
}

ValidationResult Trainer::validate() {
  ValidationResult v;
  // The callbacks put the weights to score in the model (an average), and take them out again
  // whatever happens.
  callbacks_.validation_start(*this);
  try {
    engine_->between_steps(
        [&] { v = validation_->run(*model_, precision_.get(), loss_->get(), device_, nullptr, val_plots_.get()); });
  } catch (...) {
    callbacks_.validation_end(*this);
    throw;
  }
  callbacks_.validation_end(*this);
  return v;
}

void Trainer::end_of_epoch(int epoch) {
  plan_epochs(epoch);  // first: validation, the checkpoint and results know the run's new end
  const double seconds = seconds_since(epoch_start_);
  state_.total_seconds += seconds;
  placement_->epoch_ended(epoch, seconds);
  const auto loss = ((dp_ ? dp_->mean(state_.loss_sum) : state_.loss_sum) / std::max<std::int64_t>(state_.step, 1))
                        .to(torch::kCPU, torch::kDouble)
                        .contiguous();
  if (!dist::is_main_process()) {  // rank 0 validates and writes; the others wait for its verdict
    if (dp_->rank0_decides(false) && ctx_.reporter != nullptr) ctx_.reporter->request_stop("rank 0 stopped the run");
    return;
  }
  EpochFacts facts{epoch, seconds,
                   named_losses(state_.loss_names, std::vector<double>(loss.data_ptr<double>(), loss.data_ptr<double>() + loss.numel())),
                   ctx_.imgsz, schedule_->target_accumulate(), ctx_.schedule};
  ResultsRow row = EpochReport::training_row(facts, state_, optimizer_->groups(), profile_.get());
  // What the run trains with at this epoch's end, so that results.csv shows where a resume or
  // precision_schedule changed course: the workers, the autocast's bits (32: none), the CUDA
  // device (-1: the CPU).
  row["workers"] = static_cast<double>(runner_->workers());
  row["precision_bits"] = precision_->compute_dtype() == at::kFloat ? 32.0 : 16.0;
  row["cuda_device"] = device_.is_cuda() ? static_cast<double>(std::max<int>(device_.index(), 0)) : -1.0;
  EpochSummary summary;
  summary.last = epoch + 1 == ctx_.epochs;
  summary.epochs_per_validation = std::max(static_cast<int>(p_.get_int("val_every")), 1);
  double val_seconds = -1.0;
  if (summary.last || (p_.get_int("val_every") > 0 && (epoch + 1) % p_.get_int("val_every") == 0)) {
    const auto val_start = Clock::now();
    const ValidationResult v = validate();
    val_seconds = seconds_since(val_start);
    EpochReport::add_validation(row, v);
    summary.validated = true;
    summary.fitness = v.evaluation.fitness;
    last_metrics_ = {v.evaluation, v.table, names_};
    validated_ = true;
  }
  EpochReport::add_memory(row, device_);  // after validation: an epoch's peak includes it
  const auto results_start = Clock::now();
  summary.values = row;
  CallbackRequests requests;
  callbacks_.epoch_end(summary, progress(), requests);
  if (requests.stop_reason.empty()) requests.stop_reason = pending_stop_;
  const bool budget_ends_run = budget_.on() && summary.last && requests.stop_reason.empty();
  if (budget_ends_run) requests.stop_reason = budget_.stop_reason();
  const auto save_start = Clock::now();
  std::vector<std::string> files{"last.pt"};
  if (is_new_best(state_, summary.fitness)) files.push_back("best.pt");
  for (const auto& f : requests.checkpoints) files.push_back(f);
  // results.csv gets the epoch's row once its checkpoint is on disk, so the results never
  // list an epoch that last.pt does not hold.
  save(files, /*mid_epoch=*/false, summary.fitness, [report = report_.get(), row] { report->write(row); });
  const bool stopping = !requests.stop_reason.empty();
  // Ultralytics' plots of the final validation: the run ends here, planned or stopped.
  if (val_plots_ && validated_ && (summary.last || stopping)) {
    const auto plots = write_val_plots(*val_plots_, run_dir_, "train");
    if (!plots.empty()) YF_LOG_INFO("train: " << plots.size() << " validation plots written to " << run_dir_);
  }
  if (summary.last || stopping) checkpoints_->wait();
  const double save_seconds = seconds_since(save_start);
  if (ctx_.reporter != nullptr) {
    ctx_.reporter->epoch_values(row);
    // How this epoch's steps ran, when the step is captured: monitors tell the epoch of the
    // warm-up and capture from a steady one.
    if (const CapturedStep* c = engine_->captured(); c != nullptr && !c->failed()) {
      ctx_.reporter->epoch_values({{"step/eager", static_cast<double>(c->eager_steps() - eager_steps_before_)},
                                   {"step/replayed", static_cast<double>(c->replays() - replays_before_)}});
    }
  }
  if (stopping && ctx_.reporter != nullptr) ctx_.reporter->request_stop(requests.stop_reason);
  if (budget_ends_run) {
    const std::int64_t of = schedule_->batches_per_epoch();
    const std::string cut = epoch_cut_ && state_.step < of
                                ? " (cut short after batch " + std::to_string(state_.step) + " of " + std::to_string(of) + ")"
                                : "";
    YF_LOG_INFO(requests.stop_reason << ": the run ends with epoch " << epoch + 1 << cut << "; saved " << run_dir_
                                     << "/weights/last.pt");
  }
  YF_LOG_INFO(epoch_line(epoch, ctx_.epochs, seconds, row, state_.loss_names, summary.validated ? &last_metrics_ : nullptr,
                         val_seconds, std::chrono::duration<double>(save_start - results_start).count(), save_seconds));
  if (dp_) dp_->rank0_decides(stopping);
}

// How long the user waited for training to start, and where the time went: building the run
// (plugins, data, model), waiting for the first batch, the first steps (on CUDA: cuDNN's
// algorithm search, the capture's warm-up steps).
void Trainer::report_first_step() {
  first_step_reported_ = true;
  if (options_.on_first_step) options_.on_first_step();
  if (device_.is_cuda()) torch::cuda::synchronize(device_.index());  // the step's work, not its launch
  const double now = seconds_since_process_start();
  if (now < 0.0) return;
  YF_LOG_INFO("train: first optimizer step " << format_fixed(now, 2) << " s after the process started (run built at "
                                             << format_fixed(built_at_, 2) << " s, first batch at "
                                             << format_fixed(first_batch_at_, 2) << " s, " << steps_this_process_
                                             << " batch" << (steps_this_process_ == 1 ? "" : "es") << " into it)");
}

// In place once it exists: a captured step adds into this very tensor.
void Trainer::reset_loss_sum(const torch::Tensor& values) {
  if (state_.loss_sum.defined()) {
    state_.loss_sum.copy_(values);
  } else {
    state_.loss_sum = values.to(device_);
  }
}

void Trainer::set_batch(std::int64_t batch) {
  state_.batch = batch;
  // The graph runner tells how many samples an epoch has.
  schedule_->set_batch(batch, ctx_.samples_per_epoch);
}

void Trainer::setup_optimizer(std::int64_t batch) {
  set_batch(batch);
  optimizer_ = builder_->optimizer();
  schedule_->attach(*optimizer_, model_->module(), model_->head().nc, p_.where() + ".optimizer");
  engine_->set_optimizer(*optimizer_);
  if (resume_) restore_optimizer(*resume_, model_->module(), *optimizer_, device_, state_);
}

// What callbacks asked for during a batch: checkpoints now; a stop after this batch (in a
// data-parallel run at the epoch's end, where every rank stops together).
void Trainer::act_mid_epoch(const CallbackRequests& r) {
  if (!r.checkpoints.empty()) save(r.checkpoints, /*mid_epoch=*/true, -1.0);
  if (r.stop_reason.empty()) return;
  if (dp_) {
    pending_stop_ = r.stop_reason;
  } else {
    stop(r.stop_reason);
  }
}

EpochStats Trainer::run_rect_epoch(int epoch, std::uint64_t first_sequence) {
  runner_->prepare(epoch);
  const std::int64_t batch = runner_->batcher().batch_size();
  if (rect_plan_.imgsz != ctx_.imgsz || rect_plan_.batch != batch) {
    rect_plan_ = plan_rect_training(*runner_, rect_stages_, ctx_.imgsz, batch,
                                    static_cast<int>(largest_stride(model_->head())), p_.where() + ".train_rect");
  }
  if (first_sequence == 0) return runner_->run_planned(epoch, rect_plan_.batches);
  // A resumed epoch goes on with the batches it had not trained.
  std::vector<PlannedBatch> rest;
  std::uint64_t seen = 0;
  for (const auto& b : rect_plan_.batches) {
    if (seen >= first_sequence) rest.push_back(b);
    seen += b.indices.size();
  }
  return runner_->run_planned(epoch, rest);
}

// A spent budget ends the epoch after this batch (the graph drops what it has assembled), and
// the epoch is then the run's last. Data parallel: on rank 0's clock, so that every rank ends
// the epoch after the same batch; one broadcast a batch while a budget is set.
void Trainer::check_time_budget() {
  if (!budget_.on() || epoch_cut_) return;
  const bool spent = dp_ ? dp_->rank0_decides(budget_.spent()) : budget_.spent();
  if (!spent) return;
  epoch_cut_ = true;
  runner_->end_epoch_early();
}

// After each epoch's batches the budget plans the run again (rank 0's plan on every rank): the
// scheduler, progress lines, results and checkpoints follow the new count.
void Trainer::plan_epochs(int epoch) {
  if (!budget_.on()) return;
  int planned = pipeline_.epochs;
  if (dist::is_main_process()) {
    planned = epoch_cut_ ? epoch + 1 : budget_.plan(epoch, first_epoch_, pipeline_.epochs, last_end_seconds_);
  }
  if (dp_) planned = static_cast<int>(dp_->rank0_value(planned));
  pipeline_.epochs = planned;  // the loop's end and the graph's schedules (close_mosaic's, imgsz's)
  ctx_.epochs = planned;       // this epoch's context was made before the plan
  schedule_->set_epochs(planned);
}

void Trainer::stop(const std::string& reason) {
  if (ctx_.reporter == nullptr || budget_spent_) return;
  budget_spent_ = true;
  ctx_.reporter->request_stop(reason);
}

void Trainer::end_training() {
  if (ended_) return;
  ended_ = true;
  CallbackRequests requests;  // the run is over: nothing more to act on
  callbacks_.train_end(progress(), requests);
}

void Trainer::log_progress() {
  ProgressSnapshot snap = progress_snapshot(state_, ctx_.epochs, schedule_->batches_per_epoch(),
                                            seconds_since(epoch_start_), optimizer_->groups());
  snap.size = shown_size_;
  snap.instances = batch_instances_;
  shown_losses_ = snap.losses;
  snap.loss_scale = precision_->scale();
  window_.report(snap, ctx_.reporter);
}

// On a terminal, the epoch's bar after every batch (at most ten times a second): host counts and
// the losses of the last progress line only, so that it never waits for the device.
void Trainer::show_status() {
  if (!status_line_shown() || !dist::is_main_process()) return;
  const auto now = Clock::now();
  if (state_.step != schedule_->batches_per_epoch() && std::chrono::duration<double>(now - status_drawn_).count() < 0.1) return;
  status_drawn_ = now;
  ProgressSnapshot s = host_snapshot(state_, ctx_.epochs, schedule_->batches_per_epoch(), seconds_since(epoch_start_));
  s.losses = shown_losses_;
  s.size = shown_size_;
  s.instances = batch_instances_;
  set_status_line(status_line(s));
}

void Trainer::save(const std::vector<std::string>& files, bool mid_epoch, double fitness, std::function<void()> after) {
  if (!dist::is_main_process()) return;  // data parallel: rank 0 writes
  json meta = {{"names", names_}, {"imgsz", ctx_.imgsz}, {"epochs", ctx_.epochs}, {"fitness", fitness},
               {"seed", ctx_.seed}, {"model", model_spec_}};  // the model: what `yoloflow predict` rebuilds
  meta["pipeline"] = pipeline_.document;  // what the run folder's pipeline.json holds
  meta["callbacks"] = callbacks_.states();
  meta["freeze"] = frozen_.layers();  // a resume must train the same parameters
  // best.pt holds what is deployed (Ultralytics' best.pt: float16 EMA, nothing for a resume);
  // last.pt and the epoch files everything a resume needs.
  std::vector<std::string> full, deployable;
  for (const auto& f : files) (f == "best.pt" ? deployable : full).push_back(f);
  checkpoints_->save(make_train_checkpoint(state_, parts(), mid_epoch, seconds_since(epoch_start_), std::move(meta),
                                           callbacks_.save_tensors()),
                     weight_paths(run_dir_, full),
                     mid_epoch ? "the checkpoint of epoch " + std::to_string(state_.epoch + 1) + " (mid-epoch)"
                               : "the checkpoint of epoch " + std::to_string(state_.epoch + 1),
                     std::move(after), weight_paths(run_dir_, deployable));
}

std::unique_ptr<RunDriver> make_trainer(const Pipeline& pipeline, const Registry& registry, const RunOptions& options) {
  return std::make_unique<Trainer>(pipeline, registry, options);
}

}  // namespace

void register_trainer(Registry& registry) {
  ComponentInfo info;
  info.kind = Kind::Sink;
  info.name = kName;
  info.summary =
      "Trains a detector on the batches the pipeline delivers: the trainer owns the run's loop (YOLO11 recipe: loss, "
      "accumulation to a nominal batch, warmup, the scheduler's lr decay, gradient clipping), runs its callbacks "
      "(the ema average among them), validates each epoch and writes results and checkpoints.";
  info.schema = train_sink_schema();
  registry.add(std::move(info), kBuiltinFile, "yoloflow", YOLOFLOW_VERSION_STRING,
               BuiltinTraits{&check_train_params, &make_trainer, /*writes_run_folder=*/true});
}

}  // namespace yoloflow::core
