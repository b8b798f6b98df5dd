#include "train/train_sink.h"

#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <torch/torch.h>
#include <torch/version.h>

#include "detect/nms.h"
#include "detect/sample_grid.h"
#include "dist/data_parallel.h"
#include "model/weights_io.h"
#include "pipeline/component_factory.h"
#include "plugin/builtin_sink.h"
#include "train/captured_step.h"
#include "train/checkpoint.h"
#include "train/checkpoint_writer.h"
#include "train/cuda_memory.h"
#include "train/detection_loss.h"
#include "train/detection_metrics.h"
#include "train/fitness_tracker.h"
#include "train/lr_schedule.h"
#include "train/micro_batches.h"
#include "train/model_ema.h"
#include "train/multi_scale.h"
#include "train/oom_guard.h"
#include "train/param_groups.h"
#include "train/progress_report.h"
#include "train/results_csv.h"
#include "train/results_plot.h"
#include "train/step_engine.h"
#include "train/step_profile.h"
#include "train/train_state.h"
#include "train/train_device.h"
#include "train/train_checkpoints.h"
#include "train/train_sink_schema.h"
#include "train/training_validation.h"
#include "util/text_format.h"
#include "yoloflow/augmentation.h"
#include "yoloflow/error.h"
#include "yoloflow/log.h"
#include "yoloflow/model.h"
#include "yoloflow/monitor.h"
#include "yoloflow/optimizer.h"
#include "yoloflow/precision.h"
#include "yoloflow/rng.h"
#include "yoloflow/sink.h"
#include "yoloflow/source.h"
#include "yoloflow/version.h"

namespace yoloflow::core {
namespace {

using Clock = std::chrono::steady_clock;

// Creates and configures a nested component from its {"plugin": ..., "params": ...} spec
// through the host registry (the same factory the graph runner uses for its stages).
template <class T>
std::unique_ptr<T> make_component(Kind kind, const json& spec, const std::string& path,
                                  const StageContext& ctx) {
  StageContext sub = ctx;
  sub.node = path;
  return create_component<T>(host_registry(), kind, spec, path, sub);
}

// The resolved pipeline `yoloflow run` wrote into the run folder before building the graph;
// null when the sink runs without one (a test driving it directly).
json read_run_pipeline(const std::string& run_dir) {
  std::ifstream f(run_dir + "/pipeline.json");
  if (!f) return json();
  try {
    return json::parse(f);
  } catch (const std::exception& e) {
    YF_LOG_WARN("train: " << run_dir << "/pipeline.json is not valid JSON (" << e.what()
                          << "); checkpoints will not hold the pipeline");
    return json();
  }
}

class TrainSink final : public Sink {
 public:
  static Schema schema() { return train_sink_schema(); }

  void configure(const Params& p, const StageContext& ctx) override {
    ctx_ = ctx;
    gains_ = LossGains{p.get_float("box"), p.get_float("cls"), p.get_float("dfl")};
    if (loss_) {  // reconfigured at an epoch boundary: only scheduled values change
      loss_->set_gains(gains_);
      ctx_ = ctx;
      return;
    }
    p_ = p;
    // Before anything touches CUDA: the allocator reads its configuration once, at initialisation.
    apply_cuda_alloc_conf(p.get_string("cuda_alloc_conf"), ctx.node + ".params.cuda_alloc_conf");
    state_.micro_batch = p.get_int("micro_batch");
    device_ = dist::rank_device(pick_train_device(p.get_string("device").empty() ? ctx.device : p.get_string("device")));
    set_training_threads(device_, p.get_int("cpu_threads"));
    set_cuda_memory_fraction(device_, p.get_float("cuda_memory_fraction"));
    torch::manual_seed(ctx.seed);
    open_validation(p, ctx);
    // The head's class count follows the dataset unless the pipeline sets it.
    json model_spec = p.get_json("model");
    const int dataset_nc = static_cast<int>(names_.size());
    if (!model_spec.contains("params") || !model_spec["params"].is_object()) model_spec["params"] = json::object();
    // (Resolution fills in the plugin's default, 0 = automatic.)
    if (!model_spec["params"].contains("nc") ||
        (model_spec["params"]["nc"].is_number_integer() && model_spec["params"]["nc"].get<int>() == 0)) {
      model_spec["params"]["nc"] = dataset_nc;
    } else if (model_spec["params"]["nc"].is_number_integer() && model_spec["params"]["nc"].get<int>() != dataset_nc) {
      throw InvalidInput(ctx.node + ".params.model.params.nc: " + std::to_string(model_spec["params"]["nc"].get<int>()) +
                         " classes, but " + p.get_string("data") + " names " + std::to_string(dataset_nc) +
                         "; remove nc (it follows the dataset) or make them agree");
    }
    model_ = make_component<Model>(Kind::Model, model_spec, ctx.node + ".params.model", ctx);
    if (!p.is_null("weights") && p.get_string("resume").empty()) {
      load_initial_weights(p.get_string("weights"), dataset_nc, ctx.node + ".params.weights");
    }
    model_spec_ = model_spec;
    run_dir_ = ctx.run_dir.empty() ? std::string("runs/train") : ctx.run_dir;
    checkpoints_ = std::make_unique<CheckpointWriter>(p.get_bool("save_async"));
    pipeline_ = read_run_pipeline(run_dir_);
    precision_ = make_component<PrecisionStrategy>(Kind::Precision, p.get_json("precision"),
                                                   ctx.node + ".params.precision", ctx);
    std::string why;
    if (!precision_->supports(device_, why)) {
      throw InvalidInput(ctx.node + ".params.precision: " + why);
    }
    set_cuda_kernels(device_, p.get_bool("cudnn_benchmark"), p.get_bool("tf32"));
    model_->module().to(device_);
    model_->module().train();
    dp_ = dist::DataParallel::attach(model_->module(), device_);  // null in a one-process run
    loss_ = std::make_unique<DetectionLoss>(model_->head(), gains_);
    if (p.get_bool("ema")) ema_ = std::make_unique<ModelEma>(model_->module());
    if (dist::is_main_process()) {  // data parallel: rank 0 writes every output
      std::filesystem::create_directories(run_dir_ + "/weights");
      results_ = std::make_unique<ResultsCsv>(run_dir_ + "/results.csv");
      profile_ = std::make_unique<StepProfile>(run_dir_ + "/steps.csv", p.get_int("profile_every"),
                                               [device = device_] {
                                                 if (device.is_cuda()) torch::cuda::synchronize(device.index());
                                               });
    }
    engine_ = std::make_unique<StepEngine>(*model_, *loss_, *precision_, ema_.get(), dp_.get(), profile_.get(), device_,
                                           p.get_float("clip_grad"));
    if (!p.get_string("resume").empty()) restore(p.get_string("resume"));
    if (p.get_bool("cuda_graph")) {
      const std::string why = capture_unavailable_reason(device_, dp_ != nullptr, p.get_int("profile_every") > 0);
      if (why.empty() && !p.get_bool("cudnn_benchmark")) {
        // Measured on the H200 (LibTorch 2.11, cuDNN 9): capturing convolutions whose algorithm
        // cuDNN picks by heuristics failed (CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED);
        // with benchmarked algorithms, chosen during the eager steps, the capture succeeds.
        YF_LOG_INFO("train: cuda_graph turns cudnn_benchmark on (captures need benchmarked cuDNN algorithms)");
        at::globalContext().setBenchmarkCuDNN(true);
      }
      if (why.empty()) {
        // One graph: on the H200 a second capture into the first one's memory pool failed
        // (CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED), so other target shapes run eagerly.
        engine_->enable_capture(
            std::make_unique<CapturedStep>(device_, static_cast<int>(p.get_int("cuda_graph_warmup")), 1));
      } else {
        YF_LOG_WARN("train: cuda_graph off: " << why);
      }
    }
    YF_LOG_INFO("train: " << model_->architecture() << " on " << device_.str() << ", precision "
                          << p.get_json("precision").at("plugin").get<std::string>() << ", "
                          << at::get_num_threads() << " CPU thread" << (at::get_num_threads() == 1 ? "" : "s")
                          << ", run folder " << run_dir_);
  }

  void begin_epoch(int epoch) override {
    model_->module().train();
    first_batch_of_epoch_ = true;
    steps_this_process_ = 0;
    last_batch_end_ = Clock::now();
    if (resume_ && resume_->epoch == epoch) {
      // Continuing an epoch a previous process stopped in: keep its counters.
      const double seconds = resume_epoch(*resume_, state_);
      last_report_step_ = state_.step;
      epoch_start_ = Clock::now() - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
      const auto l = resume_->meta.value("epoch_loss_sum", std::vector<double>{0.0, 0.0, 0.0});
      reset_loss_sum(torch::tensor(std::vector<float>(l.begin(), l.end())));
      return;
    }
    state_.epoch = epoch;
    epoch_start_ = Clock::now();
    state_.oom_retries = 0;
    state_.step = 0;
    state_.images = 0;
    state_.next_sequence = 0;
    last_report_step_ = 0;
    reset_loss_sum(torch::zeros({3}));
  }

  // In place once it exists: a captured step adds into this very tensor.
  void reset_loss_sum(const torch::Tensor& values) {
    if (state_.loss_sum.defined()) {
      state_.loss_sum.copy_(values);
    } else {
      state_.loss_sum = values.to(device_);
    }
  }

  // On a GPU, batches are collated straight into pinned memory (cuda_memory.h says why).
  PixelAllocator pixel_allocator() override { return pinned_pixel_allocator(device_); }

  void consume(Batch& batch) override {
    // Batches already assembled when this sink asked to stop are left for the resumed run.
    if (budget_spent_) return;
    const auto t0 = Clock::now();
    const double waited = std::chrono::duration<double>(t0 - last_batch_end_).count();
    data_wait_ += waited;
    if (!optimizer_) {
      setup_optimizer(batch.size);
    } else if (first_batch_of_epoch_ && batch.size != state_.batch) {
      set_batch(batch.size);  // a batch-size schedule changed it at this epoch boundary
    }
    first_batch_of_epoch_ = false;
    if (results_ && state_.epoch == 0 && state_.step < 3) write_train_batch(batch);
    const std::int64_t ni = state_.step + batches_per_epoch_ * state_.epoch;  // iteration over the run
    apply_schedule(ni);
    const double multi_scale = p_.get_float("multi_scale");
    step_size_ = multi_scale > 0.0 ? multi_scale_size(static_cast<int>(std::max(batch.height, batch.width)), multi_scale,
                                                      static_cast<int>(largest_stride(model_->head())), ctx_.seed, ni)
                                   : 0;
    if (profile_) profile_->begin(state_.epoch, state_.step, state_.global_step, waited);

    auto pixels = torch::from_blob(batch.pixels.get(), {batch.size, batch.height, batch.width, 3}, torch::kUInt8);
    auto rows = torch::from_blob(batch.targets.data(), {batch.num_boxes(), 6}, torch::kFloat).clone();
    std::int64_t dropped = 0;
    // Padded per image (B, M, 5): a micro-batch's targets are its images' rows, a slice on dim 0.
    // With a captured step, every batch that fits takes its shape.
    torch::Tensor targets = pad_targets(rows, batch.size, p_.get_int("target_rows"), &dropped,
                                        p_.get_int("target_rows_multiple"),
                                        engine_->captured() ? p_.get_int("cuda_graph_rows") : 0);
    if (dropped > 0 && dropped_warned_epoch_ != state_.epoch) {  // once per epoch, not per step
      dropped_warned_epoch_ = state_.epoch;
      YF_LOG_WARN("train: " << dropped << " box(es) in epoch " << state_.epoch + 1 << ", step " << state_.step + 1
                            << " beyond target_rows = " << p_.get_int("target_rows")
                            << " per image were dropped; raise target_rows or set it to 0");
    }
    engine_->train(state_, pixels, targets, batch.pixels, step_size_, accumulate_, graph_key());
    if (profile_) {
      profile_->end_phase(StepProfile::kOptimizer);
      profile_->end_step();
    }

    ++state_.step;
    ++steps_this_process_;
    ++batches_since_save_;
    state_.images += batch.size;
    // The data position is global: W ranks in step have consumed every position below this
    // rank's last one plus W (ranks deal positions r, r+W, ...), whatever W the resume uses.
    const std::uint64_t world = dp_ ? static_cast<std::uint64_t>(dp_->world_size()) : 1;
    for (const auto& s : batch.samples) state_.next_sequence = std::max<std::uint64_t>(state_.next_sequence, s.sequence + world);
    const auto t1 = Clock::now();
    step_time_ += std::chrono::duration<double>(t1 - t0).count();
    if (state_.step % log_every_ == 0 || state_.step == batches_per_epoch_) log_progress();
    const std::int64_t every = p_.get_int("save_every");
    if (every > 0 && state_.micro == 0 && batches_since_save_ >= every) {
      save_last(/*mid_epoch=*/true);
    }
    const std::int64_t budget = p_.get_int("max_steps");
    if (budget > 0 && steps_this_process_ >= budget && ctx_.reporter != nullptr) {
      budget_spent_ = true;
      ctx_.reporter->request_stop("max_steps: " + std::to_string(budget) + " batches trained in this process");
    }
    last_batch_end_ = Clock::now();
  }

  // Values the captured kernels hold as constants; a change needs another graph.
  std::string graph_key() const {
    std::ostringstream os;
    os << gains_.box << ',' << gains_.cls << ',' << gains_.dfl;
    return os.str();
  }

  void interrupted(int epoch) override {
    save_last(/*mid_epoch=*/true);
    if (dist::is_main_process()) checkpoints_->wait();
    YF_LOG_INFO("stopped in epoch " << epoch + 1 << " after batch " << state_.step << "; saved " << run_dir_
                                    << "/weights/last.pt");
  }

  void end_epoch(int epoch) override {
    // A resumed run that stopped after the epoch's last batch reaches here without a batch.
    if (!optimizer_) setup_optimizer(resume_ ? resume_->meta.value("batch", std::int64_t{16}) : 16);
    // Data parallel: a rank that skipped unreadable samples ran fewer batches; it takes the
    // missing steps with zero gradients so that its collectives still pair with the others'.
    while (dp_ && state_.step < batches_per_epoch_) {
      apply_schedule(state_.step + batches_per_epoch_ * state_.epoch);
      ++state_.step;
      if (++state_.micro >= accumulate_) engine_->optimizer_step(state_);
    }
    if (state_.micro > 0) engine_->optimizer_step(state_);  // the epoch's last partial accumulation
    if (const CapturedStep* captured = engine_->captured(); captured && !captured->failed()) {
      YF_LOG_INFO("train: cuda_graph: " << captured->graphs() << " graph(s) captured; so far "
                                        << captured->replays() << " steps replayed, " << captured->eager_steps()
                                        << " eager (warm-up, or more target rows than cuda_graph_rows)");
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - epoch_start_).count();
    state_.total_seconds += seconds;
    const auto train_loss = ((dp_ ? dp_->mean(state_.loss_sum) : state_.loss_sum) / std::max<std::int64_t>(state_.step, 1)).to(torch::kCPU);
    if (!dist::is_main_process()) {  // rank 0 validates and writes; the others wait for its verdict
      if (dp_->rank0_decides(false) && ctx_.reporter != nullptr) {
        ctx_.reporter->request_stop("rank 0 stopped the run (early stop)");
      }
      return;
    }
    std::map<std::string, double> row;
    row["epoch"] = epoch + 1;
    row["time"] = state_.total_seconds;
    row["train/box_loss"] = train_loss[0].item<double>();
    row["train/cls_loss"] = train_loss[1].item<double>();
    row["train/dfl_loss"] = train_loss[2].item<double>();
    const auto& groups = optimizer_->groups();
    for (std::size_t g = 0; g < groups.size() && g < 3; ++g) row["lr/pg" + std::to_string(g)] = groups[g].lr;
    row["images_per_second"] = state_.images / std::max(seconds, 1e-9);
    row["imgsz"] = ctx_.imgsz;
    row["batch"] = static_cast<double>(state_.batch);
    row["accumulate"] = static_cast<double>(target_accumulate_);
    for (const auto& kv : scheduled_values()) row[kv.first] = kv.second;
    row["micro_batch"] = static_cast<double>(state_.micro_batch > 0 ? std::min(state_.micro_batch, state_.batch) : state_.batch);
    row["oom_retries"] = static_cast<double>(state_.oom_retries);
    if (profile_) {
      const auto means = profile_->take_epoch_means();
      for (const auto& kv : means) row[kv.first] = kv.second;
      if (!means.empty()) YF_LOG_INFO("epoch " << epoch + 1 << " " << StepProfile::summary(means));
    }

    const bool last = epoch + 1 == ctx_.epochs;
    const int every = static_cast<int>(p_.get_int("val_every"));
    double fitness = -1.0;
    double val_seconds = -1.0;
    if (last || (every > 0 && (epoch + 1) % every == 0)) {
      const auto val_start = Clock::now();
      const auto v = validation_->run(*model_, ema_.get(), precision_.get(), loss_.get(), device_);
      val_seconds = std::chrono::duration<double>(Clock::now() - val_start).count();
      row["metrics/precision(B)"] = v.metrics.precision;
      row["metrics/recall(B)"] = v.metrics.recall;
      row["metrics/mAP50(B)"] = v.metrics.map50;
      row["metrics/mAP50-95(B)"] = v.metrics.map50_95;
      row["val/box_loss"] = v.losses[0];
      row["val/cls_loss"] = v.losses[1];
      row["val/dfl_loss"] = v.losses[2];
      fitness = v.metrics.fitness;
      last_metrics_ = v.metrics;
      validated_ = true;
    }
    // After validation: an epoch's peak includes its validation (the last epoch's too).
    if (const auto mem = take_cuda_memory_stats(device_)) {  // absent on the CPU
      row["gpu_mem_GiB"] = mem->peak_allocated_gib;
      row["gpu_reserved_GiB"] = mem->reserved_gib;
      row["gpu_peak_reserved_GiB"] = mem->peak_reserved_gib;
      row["gpu_fragmentation_GiB"] = mem->fragmentation_gib;
      row["gpu_num_ooms"] = mem->num_ooms;
    }
    const auto results_start = Clock::now();
    results_->add_row(row);
    results_->save();
    plot_results(*results_, run_dir_ + "/results.png");
    const auto save_start = Clock::now();
    const FitnessVerdict verdict = judge_fitness(state_, fitness, std::max(every, 1), p_.get_int("patience"), last);
    save_checkpoints(epoch, fitness, verdict.write_best);
    const auto save_end = Clock::now();
    if (ctx_.reporter != nullptr) ctx_.reporter->epoch_values(row);
    const bool early_stop = verdict.stop;
    if (early_stop) {
      checkpoints_->wait();  // the run ends here
      if (ctx_.reporter != nullptr) {
        ctx_.reporter->request_stop("early stop: no fitness improvement in the last " +
                                    std::to_string(state_.epochs_without_improvement) + " epochs (patience " +
                                    std::to_string(p_.get_int("patience")) + ")");
      }
    }
    YF_LOG_INFO("epoch " << epoch + 1 << "/" << ctx_.epochs << " done in " << format_duration(seconds)
                         << ": box " << row["train/box_loss"] << " cls " << row["train/cls_loss"] << " dfl "
                         << row["train/dfl_loss"]
                         << (fitness >= 0 ? ", mAP50 " + std::to_string(last_metrics_.map50) +
                                                " mAP50-95 " + std::to_string(last_metrics_.map50_95)
                                          : std::string())
                         << "; then " << (val_seconds >= 0 ? "validation " + format_fixed(val_seconds, 2) + " s, " : "")
                         << "results " << format_fixed(std::chrono::duration<double>(save_start - results_start).count(), 2)
                         << " s, checkpoints " << format_fixed(std::chrono::duration<double>(save_end - save_start).count(), 2)
                         << " s");
    if (dp_) dp_->rank0_decides(early_stop);
  }

  std::string summary() const override {
    if (!results_) return "";  // not rank 0
    // Only the files this run left behind: an interrupted first epoch has no results yet.
    std::vector<std::string> files;
    for (const char* f : {"results.csv", "results.png", "weights/last.pt", "weights/best.pt"}) {
      if (std::filesystem::exists(run_dir_ + "/" + f)) files.emplace_back(f);
    }
    std::ostringstream os;
    os << "trained " << results_->rows().size() << " epoch" << (results_->rows().size() == 1 ? "" : "s") << " in "
       << format_duration(state_.total_seconds) << "; results in " << run_dir_;
    for (std::size_t i = 0; i < files.size(); ++i) os << (i == 0 ? " (" : ", ") << files[i];
    os << (files.empty() ? "\n" : ")\n");
    if (validated_) {
      os << "final validation: P " << last_metrics_.precision << "  R " << last_metrics_.recall << "  mAP50 "
         << last_metrics_.map50 << "  mAP50-95 " << last_metrics_.map50_95 << "\n";
    }
    return os.str();
  }

 private:
  void open_validation(const Params& p, const StageContext& ctx) {
    json source_spec = {{"plugin", "yolo_dataset"},
                        {"params", {{"data", p.get_string("data")}, {"split", p.get_string("val_split")}}}};
    ValidationOptions vo;
    vo.imgsz = ctx.imgsz;
    vo.batch = p.get_int("val_batch");
    vo.rect = p.get_bool("rect");
    NmsOptions nms;
    nms.conf = p.get_float("val_conf");
    nms.iou = p.get_float("val_iou");
    nms.max_det = static_cast<int>(p.get_int("max_det"));
    nms.multi_label = true;  // one box may count for several classes, as Ultralytics validates
    validation_ = std::make_unique<TrainingValidation>(
        host_registry(), make_component<DataSource>(Kind::Source, source_spec, ctx.node + ".validation.source", ctx),
        vo, nms, ctx.node + ".validation");
    names_ = validation_->names();
    YF_LOG_INFO("validation: " << validation_->size() << " images of split '" << p.get_string("val_split") << "'");
  }

  // Batch-dependent settings: accumulation to the nominal batch, batches per epoch, the
  // weight-decay scale and the warmup length (in batches).
  void set_batch(std::int64_t batch) {
    const std::int64_t nbs = p_.get_int("nominal_batch");
    state_.batch = batch;
    const std::int64_t world = dp_ ? dp_->world_size() : 1;  // each step sees batch x world images
    accumulate_ratio_ = static_cast<double>(nbs) / static_cast<double>(batch * world);
    target_accumulate_ = std::max<std::int64_t>(std::llround(accumulate_ratio_), 1);
    accumulate_ = target_accumulate_;
    // The graph runner tells how many samples an epoch has; the last batch may be partial.
    expected_images_ = ctx_.samples_per_epoch;
    batches_per_epoch_ = std::max<std::int64_t>((expected_images_ + batch - 1) / batch, 1);
    if (!optimizer_) return;
    auto& g = optimizer_->groups();
    g[0].weight_decay = scaled_weight_decay(base_weight_decay_, batch * world * target_accumulate_, nbs);
    schedule_ = std::make_unique<LrSchedule>(schedule_options_, batches_per_epoch_);
    YF_LOG_INFO("batch " << batch << " x accumulate " << target_accumulate_ << " (nominal " << nbs << "), "
                         << batches_per_epoch_ << " batches an epoch");
  }

  void setup_optimizer(std::int64_t batch) {
    const std::int64_t nbs = p_.get_int("nominal_batch");
    const std::int64_t world = dp_ ? dp_->world_size() : 1;
    set_batch(batch);
    log_every_ = p_.get_int("log_every");
    optimizer_ = make_component<Optimizer>(Kind::Optimizer, p_.get_json("optimizer"), ctx_.node + ".params.optimizer", ctx_);
    OptimizerSetup setup;
    setup.nc = model_->head().nc;
    setup.nominal_batch = nbs;
    setup.total_iterations = planned_iterations(expected_images_, batch, world, nbs, ctx_.epochs);
    optimizer_->setup(recipe_param_groups(model_->module()), setup);
    engine_->set_optimizer(*optimizer_);
    auto& g = optimizer_->groups();
    base_weight_decay_ = g[0].weight_decay;
    finish_recipe_groups(g, scaled_weight_decay(base_weight_decay_, batch * world * target_accumulate_, nbs));
    for (const auto& grp : g) {
      if (grp.initial_lr <= 0.0) {
        std::ostringstream lr;
        lr << grp.initial_lr;
        throw InvalidInput("stages." + ctx_.node + ".params.optimizer: " + optimizer_->description() + " left the '" +
                           grp.name + "' group with learning rate " + lr.str() +
                           " after setup(); an optimizer sets lr and initial_lr of every group (yoloflow/optimizer.h)");
      }
    }
    base_momentum_ = g[0].momentum;
    const WarmupTraits traits = optimizer_->warmup_traits();
    warmup_momentum_ = traits.momentum;
    LrScheduleOptions o;
    o.epochs = ctx_.epochs;
    o.lrf = p_.get_float("lrf");
    o.cosine = p_.get_bool("cos_lr");
    o.warmup_epochs = p_.get_float("warmup_epochs");
    o.warmup_momentum = p_.get_float("warmup_momentum");
    o.warmup_bias_lr = p_.get_float("warmup_bias_lr");
    if (!traits.bias_lr) o.warmup_bias_lr = 0.0;  // the optimizer says the bias warmup does not apply
    schedule_options_ = o;
    schedule_ = std::make_unique<LrSchedule>(o, batches_per_epoch_);
    if (resume_) restore_optimizer(*resume_, model_->module(), *optimizer_, device_, state_);
    YF_LOG_INFO("optimizer: " << optimizer_->description() << "; batch " << batch
                              << (world > 1 ? " x " + std::to_string(world) + " ranks" : std::string())
                              << " x accumulate " << target_accumulate_ << " (nominal " << nbs << "), weight decay "
                              << g[0].weight_decay << " on the weights group");
  }

  void apply_schedule(std::int64_t ni) {
    auto& groups = optimizer_->groups();
    const double f = schedule_->factor(state_.epoch);
    if (schedule_->warming_up(ni)) {
      // Towards the unrounded ratio, rounded half to even each step, as Ultralytics ramps it.
      accumulate_ = std::max<std::int64_t>(
          1, static_cast<std::int64_t>(std::nearbyint(schedule_->ramp(ni, 1.0, accumulate_ratio_))));
      for (std::size_t j = 0; j < groups.size(); ++j) {
        const double start = (j == 2) ? schedule_->options().warmup_bias_lr : 0.0;
        groups[j].lr = schedule_->ramp(ni, start, groups[j].initial_lr * f);
        if (warmup_momentum_) {
          groups[j].momentum = schedule_->ramp(ni, schedule_->options().warmup_momentum, base_momentum_);
        }
      }
    } else {
      accumulate_ = target_accumulate_;
      for (auto& g : groups) {
        g.lr = g.initial_lr * f;
        if (warmup_momentum_) g.momentum = base_momentum_;
      }
    }
  }

  // Fine-tuning: the pretrained tensors, except a class head sized for other classes.
  void load_initial_weights(const std::string& file, int nc, const std::string& json_path) {
    NamedTensors weights;
    try {
      weights = read_weights(file);
    } catch (const std::exception& e) {
      throw InvalidInput(json_path + ": " + e.what());
    }
    LoadOptions options;
    const int file_nc = classes_in(weights);
    if (file_nc > 0 && file_nc != nc) options.may_differ = is_class_head_tensor;
    const auto report = load_weights(model_->module(), weights, file, options);
    YF_LOG_INFO("weights: " << report.loaded << "/" << weights.size() << " tensors from " << file
                            << (report.kept_initial.empty()
                                    ? std::string()
                                    : "; class head (" + std::to_string(report.kept_initial.size()) + " tensors) kept initial: " +
                                          std::to_string(file_nc) + " classes in the file, " + std::to_string(nc) +
                                          " in the dataset"));
  }

  // Ultralytics' train_batch0..2.jpg: the run's first batches as the model receives them,
  // boxes and class names drawn (up to 16 images each). Not worth failing a run over.
  void write_train_batch(const Batch& batch) const {
    auto samples = samples_of_batch(batch);
    if (samples.size() > 16) samples.resize(16);
    const std::string path = run_dir_ + "/train_batch" + std::to_string(state_.step) + ".jpg";
    if (!cv::imwrite(path, draw_sample_grid(samples, names_, 1920))) YF_LOG_WARN("train: cannot write " << path);
  }

  void log_progress() {
    ProgressSnapshot snap;
    snap.epoch = state_.epoch;
    snap.epochs = ctx_.epochs;
    snap.step = state_.step;
    snap.steps_in_epoch = batches_per_epoch_;
    snap.global_step = state_.global_step;
    snap.images = state_.images;
    snap.epoch_seconds = std::chrono::duration<double>(Clock::now() - epoch_start_).count();
    const auto l = (state_.loss_sum / std::max<std::int64_t>(state_.step, 1)).to(torch::kCPU);
    snap.losses = {l[0].item<double>(), l[1].item<double>(), l[2].item<double>()};
    // Host seconds per batch since the last report: waiting for the graph vs in the step (on
    // CUDA the step's launches run ahead; reading the losses above waited for them, so the
    // window's total is right).
    const double window = static_cast<double>(std::max<std::int64_t>(state_.step - last_report_step_, 1));
    snap.data_wait_ms = 1e3 * data_wait_ / window;
    snap.step_ms = 1e3 * step_time_ / window;
    snap.size = step_size_;
    for (const auto& g : optimizer_->groups()) snap.lrs.push_back(g.lr);
    snap.loss_scale = precision_->scale();
    YF_LOG_INFO(progress_line(snap));
    if (ctx_.reporter != nullptr) ctx_.reporter->step(progress_event(snap));
    data_wait_ = step_time_ = 0.0;
    last_report_step_ = state_.step;
  }

  // The state a resumed run needs. At an epoch end: the next epoch, position 0.
  Checkpoint make_checkpoint(bool mid_epoch, double fitness) const {
    json meta = {{"names", names_}, {"imgsz", ctx_.imgsz}, {"epochs", ctx_.epochs}, {"fitness", fitness},
                 {"seed", ctx_.seed}, {"model", model_spec_}};  // the model: what `yoloflow predict` rebuilds
    if (!pipeline_.is_null()) meta["pipeline"] = pipeline_;
    return make_train_checkpoint(state_, parts(), mid_epoch,
                                 std::chrono::duration<double>(Clock::now() - epoch_start_).count(), std::move(meta));
  }

  TrainingParts parts() const { return {*model_, ema_.get(), optimizer_.get(), *precision_}; }

  void save_last(bool mid_epoch) {
    if (!dist::is_main_process()) return;  // data parallel: rank 0 writes
    checkpoints_->save(make_checkpoint(mid_epoch, -1.0), {run_dir_ + "/weights/last.pt"});
    batches_since_save_ = 0;
  }

  // Continues from a checkpoint written by this sink (same architecture and class count).
  void restore(const std::string& path) {
    auto ck = std::make_unique<Checkpoint>(load_checkpoint(path));
    const std::int64_t micro_batch = state_.micro_batch;
    restore_train_checkpoint(*ck, path, parts(), state_);
    if (state_.micro_batch != micro_batch) {
      YF_LOG_INFO("resume: micro_batch " << state_.micro_batch << " (from " << path << ")");
    }
    if (results_) results_->load(ck->epoch);
    YF_LOG_INFO("resuming from " << path << ": epoch " << ck->epoch + 1 << ", batch " << ck->step_in_epoch
                                 << " (sample position " << ck->next_sequence << "), " << state_.global_step
                                 << " optimizer steps so far");
    resume_ = std::move(ck);
  }

  // The pipeline's per-epoch schedules as they stand this epoch, recorded in results.csv.
  std::map<std::string, double> scheduled_values() const { return ctx_.schedule; }

  void save_checkpoints(int epoch, double fitness, bool best) {
    std::vector<std::string> paths{run_dir_ + "/weights/last.pt"};
    if (best) paths.push_back(run_dir_ + "/weights/best.pt");
    const auto period = p_.get_int("save_period");
    if (period > 0 && (epoch + 1) % period == 0) {
      paths.push_back(run_dir_ + "/weights/epoch" + std::to_string(epoch + 1) + ".pt");
    }
    checkpoints_->save(make_checkpoint(/*mid_epoch=*/false, fitness), std::move(paths));
    batches_since_save_ = 0;
    if (epoch + 1 == ctx_.epochs) checkpoints_->wait();  // the run's files are complete when it ends
  }

  Params p_;
  std::int64_t expected_images_ = 0;
  StageContext ctx_;
  torch::Device device_{torch::kCPU};
  std::unique_ptr<Model> model_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<PrecisionStrategy> precision_;
  std::unique_ptr<DetectionLoss> loss_;
  std::unique_ptr<ModelEma> ema_;
  std::unique_ptr<dist::DataParallel> dp_;
  std::unique_ptr<TrainingValidation> validation_;
  std::unique_ptr<LrSchedule> schedule_;
  std::unique_ptr<ResultsCsv> results_;
  std::unique_ptr<StepProfile> profile_;  // rank 0 only, like results_
  std::unique_ptr<StepEngine> engine_;
  TrainState state_;
  std::unique_ptr<CheckpointWriter> checkpoints_;
  std::vector<std::string> names_;
  json model_spec_;  // {"plugin", "params"} as built, nc resolved
  json pipeline_;    // the run folder's resolved pipeline.json; null when there is none
  LossGains gains_;
  std::string run_dir_;
  MetricsResult last_metrics_;
  bool validated_ = false;  // last_metrics_ holds a validation of this process
  Clock::time_point epoch_start_;
  int dropped_warned_epoch_ = -1;  // epoch whose target-row overflow was already reported
  std::int64_t accumulate_ = 1, target_accumulate_ = 1, batches_per_epoch_ = 1, log_every_ = 10;
  double accumulate_ratio_ = 1.0;  // nominal batch / (batch x ranks), before rounding
  std::int64_t steps_this_process_ = 0, batches_since_save_ = 0, last_report_step_ = 0;
  bool first_batch_of_epoch_ = true;
  bool budget_spent_ = false;
  double base_weight_decay_ = 0.0;
  LrScheduleOptions schedule_options_;
  double data_wait_ = 0.0, step_time_ = 0.0;
  int step_size_ = 0;  // multi-scale: this batch's image size (0 = as collated)
  Clock::time_point last_batch_end_;
  std::unique_ptr<Checkpoint> resume_;  // set while a resumed run has not yet passed its first epoch
  double base_momentum_ = 0.937;
  bool warmup_momentum_ = true;  // the optimizer's WarmupTraits::momentum
};

}  // namespace

void register_train_sink(Registry& registry) {
  add_builtin_sink<TrainSink>(registry, "train",
      "Trains a detector on the batches it receives (YOLO11 recipe: loss, accumulation to a nominal batch, "
      "warmup, lr schedule, gradient clipping, EMA), validates each epoch and writes results and checkpoints.");
}

}  // namespace yoloflow::core
