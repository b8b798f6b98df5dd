#include "training/trainer/trainer.h"

#include <algorithm>
#include <ostream>

#include <torch/torch.h>

#include "log/logging.h"
#include "runtime/pipeline/component_origin.h"
#include "runtime/run/epoch_loop.h"
#include "runtime/run/epoch_run.h"
#include "runtime/util/process_clock.h"
#include "runtime/util/text_format.h"
#include "training/autobatch/auto_batch_profiler.h"
#include "training/callbacks/ema_callback.h"
#include "training/device/cuda_memory.h"
#include "training/device/train_device.h"
#include "training/step/train_device_setup.h"
#include "training/step/train_setup.h"
#include "training/trainer/labels_plot.h"
#include "training/trainer/train_progress.h"
#include "training/trainer/train_sink_checks.h"
#include "training/trainer/train_sink_schema.h"
#include "training/trainer/trainer_driver.h"
#include "yoloflow/error.h"
#include "yoloflow/log.h"
#include "yoloflow/version.h"

namespace yoloflow::core {

Trainer::Trainer(const Pipeline& pipeline, const Registry& registry, const RunOptions& options)
    : pipeline_(pipeline),
      options_(options),
      stage_(pipeline_.stage(pipeline_.sink)),
      control_(pipeline.epochs, options.stop_flag) {
  // A resumed run: its checkpoint read once, before anything is built; restored in build().
  const json first_params = pipeline.stage_params(stage_.name, 0);
  resume_path_ = !options.resume_checkpoint.empty() ? options.resume_checkpoint : first_params.value("resume", std::string());
  ResumePoint resumed;
  if (!resume_path_.empty()) {
    resume_ = std::make_unique<Checkpoint>(load_checkpoint(resume_path_));
    if (deployable_only(*resume_)) {
      throw InvalidInput(resume_path_ + " holds the weights to deploy only (a run's best.pt: float16 EMA, no optimizer "
                         "state); resume from the run's last.pt, or fine-tune from this file with model=" + resume_path_);
    }
    resumed = resume_point(*resume_);
    first_epoch_ = resumed.epoch;
    first_sequence_ = resumed.next_sequence;
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
  if (resume_ && budget_.on()) {
    control_.plan_epochs(std::max(resumed.planned_epochs > 0 ? resumed.planned_epochs : pipeline.epochs, first_epoch_ + 1));
  }
  // Choosing the device counts devices but creates no CUDA context; the allocator reads its
  // configuration when the first one is created, so it is set before anything else.
  device_ = train_device_of(p_, options.device.empty() ? pipeline.device : options.device);
  set_up_train_device(device_, p_, p_.get_string("cuda_alloc_conf"));
  const std::string augment_on = p_.get_string("augment_on");
  placement_ = std::make_unique<AugmentPlacement>(augment_on, device_, GraphRunner::workers_for(pipeline),
                                                  PixelComposer::composes_on(device_),
                                                  p_.get_string("device_image_cache"),
                                                  p_.get_float("cuda_memory_fraction"));
  // The data path first: its stages read their data here, and their failures name them.
  RunnerOptions ro;
  ro.require_pixel_plans = augment_on == "device";
  ro.source_images = placement_->kept_images();
  ro.run_dir = options.run_dir;
  ro.device = device_.str();
  ro.control = &control_;
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
  display_.built();
  YF_LOG_DEBUG("train: data path built " << format_fixed(data_built_at, 2) << " s after the process started, the rest "
                                          << format_fixed(seconds_since_process_start(), 2) << " s");
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
  run_dir_ = ctx_.run_dir.empty() ? std::string("runs/train") : ctx_.run_dir;
  checkpoints_ = std::make_unique<CheckpointWriter>(p_.get_bool("save_async"));
  // The strategy of the epoch the run starts in: a resumed run's may be a scheduled one, whose
  // state its checkpoint holds.
  precision_plan_ = PrecisionPlan(p_.get_json("precision"), p_.get_json("precision_schedule"));
  use_precision(first_epoch_);
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
  build_outputs(registry, callbacks_with_ema(p_.get_json("callbacks"), p_.get_bool("ema"), callbacks_path, p_.where() + ".ema"),
                callbacks_path);
  engine_ = std::make_unique<StepEngine>(*model_, loss_->loss(), *precision_, dp_.get(), profile_.get(), device_,
                                         p_.get_float("clip_grad"), [this] { callbacks_.optimizer_step(*this); });
  set_up_optimizer();
  if (resume_) {  // a checkpoint of this stage: same architecture, class count and frozen layers
    resumed_epoch_seconds_ = restore_train_checkpoint(*resume_, resume_path_, p_.where() + ".freeze", parts(), device_, state_);
    continue_epoch_ = true;
    resumed_ = true;
    if (report_) report_->resume(first_epoch_);
    resume_.reset();
  }
  set_up_rect_and_capture();
  YF_LOG_INFO("train: " << model_->architecture() << " on " << device_.str() << ", precision "
                        << precision_spec_.value("plugin", std::string()) << ", " << at::get_num_threads()
                        << " CPU thread" << (at::get_num_threads() == 1 ? "" : "s") << ", run folder " << run_dir_);
}

// What rank 0 writes and runs: results, plots, the step profile, the callbacks. Nothing is
// written into the run folder here: a run refused while it is being built (a checkpoint of
// another model, data that cannot be read) leaves the folder as it was.
void Trainer::build_outputs(const Registry& registry, const json& callbacks, const std::string& callbacks_path) {
  if (!dist::is_main_process()) return;  // data parallel: rank 0 writes every output and runs the callbacks
  // The evaluator's columns are known now, before any validation: every row has them.
  report_ = std::make_unique<EpochReport>(
      run_dir_, p_.get_bool("plots"), results_columns(state_.loss_names, validation_->evaluator(model_->head()).columns()));
  if (p_.get_bool("plots")) val_plots_ = std::make_unique<ValPlots>(names_, p_.get_float("val_conf"));
  profile_ = std::make_unique<StepProfile>(run_dir_ + "/steps.csv", p_.get_int("profile_every"), [device = device_] {
    if (device.is_cuda()) torch::cuda::synchronize(device.index());
  });
  callbacks_ = TrainCallbacks(registry, callbacks, callbacks_path, ctx_);
}

void Trainer::set_up_optimizer() {
  // The first epoch's batches: the batcher's size, or the whole epoch when it holds fewer
  // samples. A batch of another size sets the schedule again when it arrives.
  std::int64_t batch = runner_->batcher().batch_size();
  if (ctx_.samples_per_epoch > 0) batch = std::min(batch, ctx_.samples_per_epoch);
  set_batch(std::max<std::int64_t>(batch, 1));
  optimizer_ = builder_->optimizer();
  schedule_->attach(*optimizer_, model_->module(), model_->head().nc, p_.where() + ".optimizer");
  engine_->set_optimizer(*optimizer_);
}

void Trainer::set_up_rect_and_capture() {
  if (p_.get_bool("train_rect")) {
    std::vector<std::string> stages = rect_shape_stages(pipeline_);
    if (stages.empty()) {
      throw InvalidInput(p_.where() + ".train_rect: no augmentation stage of this pipeline takes a batch's shape as "
                         "`height` and `width` (random_perspective and letterbox do): add one before the batcher");
    }
    if (dist::current_env().world_size > 1) {
      throw InvalidInput(p_.where() + ".train_rect: rectangular batches train on one process; leave out train_rect or "
                         "run on one device");
    }
    rect_ = RectEpochs(std::move(stages), static_cast<int>(largest_stride(model_->head())), p_.where() + ".train_rect");
  }
  if (!capture_requested(p_.get_json("cuda_graph"), device_)) return;
  if (rect_.on()) {
    YF_LOG_INFO("train: rectangular batches change shape batch to batch; cuda_graph is not used, steps run eagerly");
    return;
  }
  engine_->enable_capture_if_possible(p_.get_int("profile_every") > 0, static_cast<int>(p_.get_int("cuda_graph_warmup")),
                                      p_.get_json("cuda_graph").is_string());
  engine_->share_graph_pool(p_.get_bool("cuda_graph_shared_pool"));
}

void Trainer::at_epoch(int epoch) {
  ctx_ = runner_->context(stage_.name, epoch);
  ctx_.device = device_.str();
  use_precision(epoch);
  StageContext loss_context = ctx_;
  loss_context.node = p_.where() + ".loss";
  loss_->at_epoch(pipeline_.stage_params(stage_.name, epoch, control_.epochs()).at("loss"), loss_context);
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
  // The bar leaves the terminal however the run ends (an error line is printed in its place).
  struct StatusLineGuard {
    ~StatusLineGuard() { clear_status_line(); }
  } status_guard;
  EpochRunSteps steps;
  steps.resuming = resumed_;
  steps.plan_note = budget_.on() ? " or a time budget of " + budget_.text() : std::string();
  steps.first_epoch = first_epoch_;
  steps.before = [this] {
    CallbackRequests requests;
    callbacks_.train_start(TrainRun{run_dir_, names_, control_.epochs(), resumed_}, requests);
    act_mid_epoch(requests);
    if (p_.get_bool("plots") && !resumed_ && dist::is_main_process()) write_labels_plot();
    budget_.start();
  };
  steps.epoch = [this](int epoch) { return run_epoch(epoch); };
  steps.after = [this] {
    if (dist::is_main_process()) checkpoints_->wait();  // the run's files are complete when it ends
    end_training();
  };
  return run_epochs(*runner_, options_, steps, out);
}

EpochStats Trainer::run_epoch(int epoch) {
  at_epoch(epoch);
  const std::uint64_t from = epoch == first_epoch_ ? first_sequence_ : 0;
  EpochStats stats = rect_.on() ? rect_.run(*runner_, epoch, ctx_.imgsz, from) : runner_->run_epoch(epoch, from);
  clear_status_line();  // the epoch's bar: what follows is printed in its place
  if (stats.interrupted) {
    // Stopped after the batch in hand: last.pt continues from here.
    save({"last.pt"}, /*mid_epoch=*/true, -1.0);
    if (dist::is_main_process()) checkpoints_->wait();
    YF_LOG_INFO("stopped in epoch " << epoch + 1 << " after batch " << state_.step << "; saved " << run_dir_
                                    << "/weights/last.pt");
    return stats;
  }
  const auto end_start = Clock::now();
  end_of_epoch(epoch);
  stats.end_seconds = std::chrono::duration<double>(Clock::now() - end_start).count();
  last_end_seconds_ = stats.end_seconds;
  return stats;
}

// Ultralytics' labels.jpg when a run starts (not again on resume): the training labels, read
// without decoding an image. A plot is worth a warning, never a failed run (a source's labels()
// that throws, a full disk).
void Trainer::write_labels_plot() {
  try {
    const LabelStatistics labels = collect_labels(runner_->source());
    if (labels.available) {
      core::write_labels_plot(labels, names_, run_dir_ + "/labels.jpg");
      YF_LOG_INFO("train: " << labels.classes.size() << " training labels plotted to " << run_dir_ << "/labels.jpg");
    } else {
      YF_LOG_INFO("train: no labels.jpg: stage '" << pipeline_.source
                                                  << "' (the data source) does not give its labels without decoding its images");
    }
  } catch (const std::exception& e) {
    YF_LOG_WARN("train: no labels.jpg: " << e.what());
  }
}

std::string Trainer::summary() const {
  if (!report_) return "";  // not rank 0
  return report_->summary(state_.total_seconds, validated_ ? &last_metrics_ : nullptr);
}

const std::vector<ParamGroup>& Trainer::param_groups() const {
  static const std::vector<ParamGroup> kNone;
  return optimizer_ ? optimizer_->groups() : kNone;
}

TrainProgress Trainer::progress() const { return train_progress(state_, ctx_.epochs, schedule_->batches_per_epoch()); }

// On a GPU, batches are collated straight into pinned memory (cuda_memory.h says why).
PixelAllocator Trainer::StepSink::pixel_allocator() { return pinned_pixel_allocator(trainer_.device_); }
// augment_on: the augmentations' pixels composed here, on the training device.
bool Trainer::StepSink::composes_pixel_plans() const { return trainer_.placement_ && trainer_.placement_->on_device(); }

namespace {

constexpr const char* kName = "train";

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
               BuiltinTraits{&check_train_params, &make_trainer, /*writes_run_folder=*/true, &resolve_auto_batch});
}

}  // namespace yoloflow::core
