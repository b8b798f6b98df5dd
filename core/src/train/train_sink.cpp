#include "train/train_sink.h"

#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>

#include <torch/torch.h>

#include "dist/data_parallel.h"
#include "pipeline/component_factory.h"
#include "plugin/builtin_sink.h"
#include "train/batch_targets.h"
#include "train/checkpoint.h"
#include "train/checkpoint_writer.h"
#include "train/cuda_memory.h"
#include "train/epoch_report.h"
#include "train/fitness_tracker.h"
#include "train/guarded_components.h"
#include "train/ema_callback.h"
#include "train/model_ema.h"
#include "train/multi_scale.h"
#include "train/optimizer_schedule.h"
#include "train/scheduled_loss.h"
#include "train/step_engine.h"
#include "train/step_profile.h"
#include "train/train_callbacks.h"
#include "train/train_checkpoints.h"
#include "train/train_device.h"
#include "train/train_progress.h"
#include "train/train_setup.h"
#include "train/train_sink_checks.h"
#include "train/train_sink_schema.h"
#include "train/train_state.h"
#include "train/validation_pipeline.h"
#include "util/device_choice.h"
#include "yoloflow/error.h"
#include "yoloflow/log.h"
#include "yoloflow/loss.h"
#include "yoloflow/model.h"
#include "yoloflow/monitor.h"
#include "yoloflow/optimizer.h"
#include "yoloflow/precision.h"
#include "yoloflow/scheduler.h"
#include "yoloflow/sink.h"

namespace yoloflow::core {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

class TrainSink final : public Sink {
 public:
  static Schema schema() { return train_sink_schema(); }

  void configure(const Params& p, const StageContext& ctx) override {
    ctx_ = ctx;
    if (loss_) {  // reconfigured at an epoch boundary: only scheduled values change
      loss_->at_epoch(p.get_json("loss"), component_context("loss"));
      return;
    }
    p_ = p;
    state_.micro_batch = p.get_int("micro_batch");
    // Choosing the device counts devices but creates no CUDA context; the allocator reads its
    // configuration when the first one is created, so it is set before anything else.
    device_ = dist::rank_device(pick_device(p.get_string("device").empty() ? ctx.device : p.get_string("device"), "device"));
    apply_cuda_alloc_conf(p.get_string("cuda_alloc_conf"), p.where() + ".cuda_alloc_conf", device_);
    set_training_threads(device_, p.get_int("cpu_threads"));
    set_cuda_memory_fraction(device_, p.get_float("cuda_memory_fraction"));
    torch::manual_seed(ctx.seed);
    validation_ = open_training_validation(p, ctx);
    names_ = validation_->names();
    model_spec_ = model_spec_for_dataset(p, static_cast<int>(names_.size()));
    model_ = make<Model>(Kind::Model, model_spec_, "model");
    if (!p.is_null("weights") && p.get_string("resume").empty()) {
      load_initial_weights(*model_, p.get_string("weights"), names_, p.where() + ".weights");
    }
    run_dir_ = ctx.run_dir.empty() ? std::string("runs/train") : ctx.run_dir;
    checkpoints_ = std::make_unique<CheckpointWriter>(p.get_bool("save_async"));
    precision_ = make<PrecisionStrategy>(Kind::Precision, p.get_json("precision"), "precision");
    std::string why;
    if (!precision_->supports(device_, why)) throw InvalidInput(p.where() + ".precision: " + why);
    scheduler_ = make<Scheduler>(Kind::Scheduler, p.get_json("scheduler"), "scheduler");
    set_cuda_kernels(device_, p.get_bool("cudnn_benchmark"), p.get_bool("tf32"));
    model_->module().to(device_);
    model_->module().train();
    dp_ = dist::DataParallel::attach(model_->module(), device_);  // null in a one-process run
    schedule_ = std::make_unique<OptimizerSchedule>(
        *scheduler_, WarmupOptions{p.get_float("warmup_epochs"), p.get_float("warmup_momentum"), p.get_float("warmup_bias_lr")},
        p.get_int("nominal_batch"), dp_ ? dp_->world_size() : 1, ctx.epochs);
    loss_ = std::make_unique<ScheduledLoss>(p.get_json("loss"), component_context("loss"));
    loss_->loss().setup(model_->head());
    state_.loss_names = loss_->loss().item_names();
    if (state_.loss_names.empty()) {
      throw Error(p.where() + ".loss: the loss '" + p.get_json("loss").at("plugin").get<std::string>() +
                  "' names no components (item_names() is empty)");
    }
    targets_ = std::make_unique<BatchTargets>(
        TargetRows{p.get_int("target_rows"), p.get_int("target_rows_multiple"), p.get_int("cuda_graph_rows")});
    const std::string callbacks_path = p.where() + ".callbacks";
    const json callbacks =
        callbacks_with_ema(p.get_json("callbacks"), p.get_bool("ema"), callbacks_path, p.where() + ".ema");
    // Nothing is written into the run folder here: a run refused while it is being built (a
    // checkpoint of another model, data that cannot be read) leaves the folder as it was.
    if (dist::is_main_process()) {  // data parallel: rank 0 writes every output and runs the callbacks
      report_ = std::make_unique<EpochReport>(run_dir_);
      profile_ = std::make_unique<StepProfile>(run_dir_ + "/steps.csv", p.get_int("profile_every"),
                                               [device = device_] {
                                                 if (device.is_cuda()) torch::cuda::synchronize(device.index());
                                               });
      callbacks_ = TrainCallbacks(host_registry(), callbacks, callbacks_path, ctx);
      ema_ = model_ema_of(callbacks_, model_->module());  // validated and saved by rank 0 only
    }
    engine_ = std::make_unique<StepEngine>(*model_, loss_->loss(), *precision_, ema_, dp_.get(), profile_.get(), device_,
                                           p.get_float("clip_grad"));
    if (!p.get_string("resume").empty()) {  // a checkpoint of this sink: same architecture and class count
      resume_ = resume_from(p.get_string("resume"), parts(), state_);
      if (report_) report_->resume(resume_->epoch);
      callbacks_.load_states(resume_->meta.value("callbacks", json::object()));
    }
    if (capture_requested(p.get_json("cuda_graph"), device_)) {
      engine_->enable_capture_if_possible(p.get_int("profile_every") > 0, p.get_bool("cudnn_benchmark"),
                                          static_cast<int>(p.get_int("cuda_graph_warmup")),
                                          p.get_json("cuda_graph").is_string());
      engine_->share_graph_pool(p.get_bool("cuda_graph_shared_pool"));
    }
    YF_LOG_INFO("train: " << model_->architecture() << " on " << device_.str() << ", precision "
                          << p.get_json("precision").at("plugin").get<std::string>() << ", "
                          << at::get_num_threads() << " CPU thread" << (at::get_num_threads() == 1 ? "" : "s")
                          << ", run folder " << run_dir_);
  }

  void begin_epoch(int epoch) override {
    if (!started_) {  // the run is built and its folder committed: callbacks may act now
      started_ = true;
      CallbackRequests requests;
      callbacks_.train_start(TrainRun{run_dir_, names_, ctx_.epochs, resume_ != nullptr}, requests);
      act_mid_epoch(requests);
    }
    model_->module().train();
    first_batch_of_epoch_ = true;
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
    state_.epoch = epoch;
    epoch_start_ = Clock::now();
    state_.oom_retries = 0;
    state_.step = 0;
    state_.images = 0;
    state_.next_sequence = 0;
    window_.restart(0);
    reset_loss_sum(torch::zeros({static_cast<std::int64_t>(state_.loss_names.size())}));
  }

  // On a GPU, batches are collated straight into pinned memory (cuda_memory.h says why).
  PixelAllocator pixel_allocator() override { return pinned_pixel_allocator(device_); }

  void consume(Batch& batch) override {
    // Batches already assembled when this sink asked to stop are left for the resumed run.
    if (budget_spent_) return;
    // The last epoch's checkpoint could not be written (a full disk): stop here, where
    // last.pt and results.csv still agree, rather than train epochs that cannot be kept.
    if (checkpoints_->failed()) checkpoints_->wait();
    const auto t0 = Clock::now();
    const double waited = std::chrono::duration<double>(t0 - last_batch_end_).count();
    if (!optimizer_) {
      setup_optimizer(batch.size);
    } else if (first_batch_of_epoch_ && batch.size != state_.batch) {
      set_batch(batch.size);  // a batch-size schedule changed it at this epoch boundary
    }
    first_batch_of_epoch_ = false;
    CallbackRequests before;
    callbacks_.batch_start(batch, progress(), before);
    const std::int64_t ni = state_.step + schedule_->batches_per_epoch() * state_.epoch;  // iteration over the run
    schedule_->apply(state_.epoch, ni);
    const double multi_scale = p_.get_float("multi_scale");
    step_size_ = multi_scale > 0.0 ? multi_scale_size(static_cast<int>(std::max(batch.height, batch.width)), multi_scale,
                                                      static_cast<int>(largest_stride(model_->head())), ctx_.seed, ni)
                                   : 0;
    if (profile_) profile_->begin(state_.epoch, state_.step, state_.global_step, waited);

    auto pixels = torch::from_blob(batch.pixels.get(), {batch.size, batch.height, batch.width, 3}, torch::kUInt8);
    const torch::Tensor targets = (*targets_)(batch, engine_->captured() != nullptr, state_.epoch, state_.step);
    engine_->train(state_, pixels, targets, batch.pixels, step_size_, schedule_->accumulate(), loss_->key());
    if (profile_) {
      profile_->end_phase(StepProfile::kOptimizer);
      profile_->end_step();
    }

    ++state_.step;
    ++steps_this_process_;
    state_.images += batch.size;
    // The data position is global: W ranks in step have consumed every position below this
    // rank's last one plus W (ranks deal positions r, r+W, ...), whatever W the resume uses.
    const std::uint64_t world = dp_ ? static_cast<std::uint64_t>(dp_->world_size()) : 1;
    for (const auto& s : batch.samples) state_.next_sequence = std::max<std::uint64_t>(state_.next_sequence, s.sequence + world);
    window_.add(waited, seconds_since(t0));
    if (state_.step % p_.get_int("log_every") == 0 || state_.step == schedule_->batches_per_epoch()) log_progress();
    CallbackRequests after;
    callbacks_.batch_end(progress(), after);
    act_mid_epoch(before);
    act_mid_epoch(after);
    const std::int64_t budget = p_.get_int("max_steps");
    if (budget > 0 && steps_this_process_ >= budget) stop("max_steps: " + std::to_string(budget) + " batches trained in this process");
    last_batch_end_ = Clock::now();
  }

  void interrupted(int epoch) override {
    save({"last.pt"}, /*mid_epoch=*/true, -1.0);
    if (dist::is_main_process()) checkpoints_->wait();
    YF_LOG_INFO("stopped in epoch " << epoch + 1 << " after batch " << state_.step << "; saved " << run_dir_
                                    << "/weights/last.pt");
    end_training();
  }

  void end_epoch(int epoch) override {
    // A resumed run that stopped after the epoch's last batch reaches here without a batch.
    if (!optimizer_) setup_optimizer(resume_ ? resume_->meta.value("batch", std::int64_t{16}) : 16);
    // Data parallel: a rank that skipped unreadable samples ran fewer batches; it takes the
    // missing steps with zero gradients so that its collectives still pair with the others'.
    while (dp_ && state_.step < schedule_->batches_per_epoch()) {
      schedule_->apply(state_.epoch, state_.step + schedule_->batches_per_epoch() * state_.epoch);
      ++state_.step;
      if (++state_.micro >= schedule_->accumulate()) engine_->optimizer_step(state_);
    }
    if (state_.micro > 0) engine_->optimizer_step(state_);  // the epoch's last partial accumulation
    engine_->log_capture_counts();
    const double seconds = seconds_since(epoch_start_);
    state_.total_seconds += seconds;
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
    EpochSummary summary;
    summary.last = epoch + 1 == ctx_.epochs;
    summary.epochs_per_validation = std::max(static_cast<int>(p_.get_int("val_every")), 1);
    double val_seconds = -1.0;
    if (summary.last || (p_.get_int("val_every") > 0 && (epoch + 1) % p_.get_int("val_every") == 0)) {
      const auto val_start = Clock::now();
      ValidationResult v;
      engine_->between_steps([&] { v = validation_->run(*model_, ema_, precision_.get(), loss_->get(), device_); });
      val_seconds = seconds_since(val_start);
      EpochReport::add_validation(row, v);
      summary.validated = true;
      summary.fitness = v.metrics.fitness;
      last_metrics_ = v.metrics;
      validated_ = true;
    }
    EpochReport::add_memory(row, device_);  // after validation: an epoch's peak includes it
    const auto results_start = Clock::now();
    summary.values = row;
    CallbackRequests requests;
    callbacks_.epoch_end(summary, progress(), requests);
    if (requests.stop_reason.empty()) requests.stop_reason = pending_stop_;
    const auto save_start = Clock::now();
    std::vector<std::string> files{"last.pt"};
    if (is_new_best(state_, summary.fitness)) files.push_back("best.pt");
    for (const auto& f : requests.checkpoints) files.push_back(f);
    // results.csv gets the epoch's row once its checkpoint is on disk, so the results never
    // list an epoch that last.pt does not hold.
    save(files, /*mid_epoch=*/false, summary.fitness, [report = report_.get(), row] { report->write(row); });
    const bool stopping = !requests.stop_reason.empty();
    if (summary.last || stopping) checkpoints_->wait();  // the run's files are complete when it ends
    const double save_seconds = seconds_since(save_start);
    if (ctx_.reporter != nullptr) ctx_.reporter->epoch_values(row);
    if (stopping && ctx_.reporter != nullptr) ctx_.reporter->request_stop(requests.stop_reason);
    YF_LOG_INFO(epoch_line(epoch, ctx_.epochs, seconds, row, state_.loss_names, summary.validated ? &last_metrics_ : nullptr, val_seconds,
                           std::chrono::duration<double>(save_start - results_start).count(), save_seconds));
    if (dp_) dp_->rank0_decides(stopping);
    if (summary.last || stopping) end_training();
  }

  std::string summary() const override {
    if (!report_) return "";  // not rank 0
    return report_->summary(state_.total_seconds, validated_ ? &last_metrics_ : nullptr);
  }

 private:
  // A component the sink's parameter `param` names, configured through the host registry; its
  // failures name it, wherever it is called (guarded_components.h).
  template <class T>
  std::unique_ptr<T> make(Kind kind, const json& spec, const std::string& param) {
    const StageContext sub = component_context(param);
    return create_guarded<T>(host_registry(), kind, spec, sub.node, sub);
  }

  // What a component this sink makes sees: its JSON path ("stages.train.params.scheduler"), and
  // the device this sink resolved (not the run's "auto").
  StageContext component_context(const std::string& param) const {
    StageContext sub = ctx_;
    sub.node = p_.where() + "." + param;
    sub.device = device_.str();
    return sub;
  }

  // In place once it exists: a captured step adds into this very tensor.
  void reset_loss_sum(const torch::Tensor& values) {
    if (state_.loss_sum.defined()) {
      state_.loss_sum.copy_(values);
    } else {
      state_.loss_sum = values.to(device_);
    }
  }

  TrainProgress progress() const { return train_progress(state_, ctx_.epochs, schedule_->batches_per_epoch()); }

  void set_batch(std::int64_t batch) {
    state_.batch = batch;
    // The graph runner tells how many samples an epoch has.
    schedule_->set_batch(batch, ctx_.samples_per_epoch);
  }

  void setup_optimizer(std::int64_t batch) {
    set_batch(batch);
    optimizer_ = make<Optimizer>(Kind::Optimizer, p_.get_json("optimizer"), "optimizer");
    schedule_->attach(*optimizer_, model_->module(), model_->head().nc, p_.where() + ".optimizer");
    engine_->set_optimizer(*optimizer_);
    if (resume_) restore_optimizer(*resume_, model_->module(), *optimizer_, device_, state_);
  }

  // What callbacks asked for during a batch: checkpoints now; a stop after this batch (in a
  // data-parallel run at the epoch's end, where every rank stops together).
  void act_mid_epoch(const CallbackRequests& r) {
    if (!r.checkpoints.empty()) save(r.checkpoints, /*mid_epoch=*/true, -1.0);
    if (r.stop_reason.empty()) return;
    if (dp_) {
      pending_stop_ = r.stop_reason;
    } else {
      stop(r.stop_reason);
    }
  }

  void stop(const std::string& reason) {
    if (ctx_.reporter == nullptr || budget_spent_) return;
    budget_spent_ = true;
    ctx_.reporter->request_stop(reason);
  }

  void end_training() {
    if (ended_) return;
    ended_ = true;
    CallbackRequests requests;  // the run is over: nothing more to act on
    callbacks_.train_end(progress(), requests);
  }

  void log_progress() {
    ProgressSnapshot snap = progress_snapshot(state_, ctx_.epochs, schedule_->batches_per_epoch(),
                                              seconds_since(epoch_start_), optimizer_->groups());
    snap.size = step_size_;
    snap.loss_scale = precision_->scale();
    window_.report(snap, ctx_.reporter);
  }

  // Writes the run's state to `files` in the weights folder (rank 0). At an epoch end the
  // checkpoint continues with the next epoch at its first sample.
  void save(const std::vector<std::string>& files, bool mid_epoch, double fitness, std::function<void()> after = nullptr) {
    if (!dist::is_main_process()) return;  // data parallel: rank 0 writes
    // The run folder's pipeline.json, written by the host once the run was built.
    if (!pipeline_read_) {
      pipeline_ = read_run_pipeline(run_dir_);
      pipeline_read_ = true;
    }
    json meta = {{"names", names_}, {"imgsz", ctx_.imgsz}, {"epochs", ctx_.epochs}, {"fitness", fitness},
                 {"seed", ctx_.seed}, {"model", model_spec_}};  // the model: what `yoloflow predict` rebuilds
    if (!pipeline_.is_null()) meta["pipeline"] = pipeline_;
    meta["callbacks"] = callbacks_.states();
    checkpoints_->save(make_train_checkpoint(state_, parts(), mid_epoch, seconds_since(epoch_start_), std::move(meta)),
                       weight_paths(run_dir_, files),
                       mid_epoch ? "the checkpoint of epoch " + std::to_string(state_.epoch + 1) + " (mid-epoch)"
                                 : "the checkpoint of epoch " + std::to_string(state_.epoch + 1),
                       std::move(after));
  }

  TrainingParts parts() const { return {*model_, ema_, optimizer_.get(), *precision_}; }

  Params p_;
  StageContext ctx_;
  torch::Device device_{torch::kCPU};
  std::unique_ptr<Model> model_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<PrecisionStrategy> precision_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<OptimizerSchedule> schedule_;
  std::unique_ptr<ScheduledLoss> loss_;
  std::unique_ptr<BatchTargets> targets_;
  ModelEma* ema_ = nullptr;  // kept by the ema callback in callbacks_
  std::unique_ptr<dist::DataParallel> dp_;
  std::unique_ptr<ValidationPipeline> validation_;
  std::unique_ptr<EpochReport> report_;   // rank 0 only
  std::unique_ptr<StepProfile> profile_;  // rank 0 only
  std::unique_ptr<StepEngine> engine_;
  TrainCallbacks callbacks_;              // rank 0 only
  TrainState state_;
  std::unique_ptr<CheckpointWriter> checkpoints_;
  std::vector<std::string> names_;
  json model_spec_;  // {"plugin", "params"} as built, nc resolved
  json pipeline_;    // the run folder's resolved pipeline.json; null when there is none
  bool pipeline_read_ = false;
  bool started_ = false;  // on_train_start was called (at the first epoch's start)
  std::string run_dir_;
  MetricsResult last_metrics_;
  bool validated_ = false;  // last_metrics_ holds a validation of this process
  Clock::time_point epoch_start_ = Clock::now(), last_batch_end_ = Clock::now();
  std::int64_t steps_this_process_ = 0;
  ProgressWindow window_;  // host times between progress lines
  bool first_batch_of_epoch_ = true;
  bool budget_spent_ = false;  // a stop was requested: the batches still arriving are left
  bool ended_ = false;         // on_train_end was called
  std::string pending_stop_;   // data parallel: a callback's stop, taken at the epoch's end
  int step_size_ = 0;  // multi-scale: this batch's image size (0 = as collated)
  std::unique_ptr<Checkpoint> resume_;  // set while a resumed run has not yet passed its first epoch
};

}  // namespace

void register_train_sink(Registry& registry) {
  add_builtin_sink<TrainSink>(registry, "train",
      "Trains a detector on the batches it receives (YOLO11 recipe: loss, accumulation to a nominal batch, "
      "warmup, the scheduler's lr decay, gradient clipping, EMA), runs its callbacks, validates each epoch and "
      "writes results and checkpoints.",
      &check_train_params);
}

}  // namespace yoloflow::core
