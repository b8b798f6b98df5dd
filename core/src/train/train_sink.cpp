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
#include "train/lr_schedule.h"
#include "train/micro_batches.h"
#include "train/model_ema.h"
#include "train/multi_scale.h"
#include "train/oom_guard.h"
#include "train/results_csv.h"
#include "train/results_plot.h"
#include "train/step_profile.h"
#include "train/train_device.h"
#include "train/validation_batch.h"
#include "train/validation_loader.h"
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

std::string format_seconds(double s) {
  const long t = static_cast<long>(s + 0.5);
  std::ostringstream os;
  if (t >= 3600) os << t / 3600 << ":" << std::setw(2) << std::setfill('0') << (t / 60) % 60 << ":";
  else os << (t / 60) << ":";
  os << std::setw(2) << std::setfill('0') << t % 60;
  return os.str();
}

class TrainSink final : public Sink {
 public:
  static Schema schema() {
    Schema s;
    s.add_component("model", "model", json{{"plugin", "yolo11"}, {"params", {{"scale", "n"}}}})
        .doc("The model to train.");
    s.add_component("optimizer", "optimizer", json{{"plugin", "auto"}}).doc("Optimizer plugin.");
    s.add_component("precision", "precision", json{{"plugin", "fp32"}})
        .doc("Precision strategy: fp32, amp_fp16 (CUDA) or amp_bf16.");
    s.add_path("data").required().doc("data.yaml of the dataset: class names and the validation split.");
    s.add_string("val_split", "val").doc("Split of `data` used for validation.");
    s.add_int("val_batch", 32).min(1).doc(
        "Images per validation batch. Beside a captured step (`cuda_graph`) validation allocates outside "
        "the graph's memory pool: yolo11n on the H200 peaked 1.2 GiB higher at 32 than at 8, where "
        "validation took ~2.5x as long (docs/performance.md).");
    s.add_bool("rect", true).doc(
        "Validate in rectangular batches (images ordered by aspect ratio, each batch letterboxed to its own "
        "stride-aligned shape), as Ultralytics validates; false letterboxes every image to imgsz x imgsz.");
    s.add_int("val_every", 1).min(0).doc("Validate every N epochs (0 = only after the last).");
    s.add_float("val_conf", 0.001).range(0.0, 1.0).doc("NMS confidence threshold in validation.");
    s.add_float("val_iou", 0.7).range(0.0, 1.0).doc("NMS IoU threshold in validation.");
    s.add_int("max_det", 300).min(1).doc("Detections kept per validation image.");
    s.add_int("nominal_batch", 64).min(1).doc("Images per optimizer step; gradients accumulate to reach it.");
    s.add_int("micro_batch", 0).min(0).fixed().doc(
        "Images per forward + backward pass: each batch runs as chunks of at most this many images whose "
        "gradients add up before the optimizer step (same step per nominal batch; peak activation memory "
        "scales with the chunk). 0 = the whole batch. Halved automatically after an out-of-memory error.");
    s.add_float("lrf", 0.01).greater_than(0.0).max(1.0).doc("Final learning rate as a fraction of lr0.");
    s.add_bool("cos_lr", false).doc("Cosine instead of linear learning-rate decay.");
    s.add_float("warmup_epochs", 3.0).min(0.0).doc("Warmup length in epochs (at least 100 iterations).");
    s.add_float("warmup_momentum", 0.8).range(0.0, 1.0).doc("Momentum at the start of warmup.");
    s.add_float("warmup_bias_lr", 0.1).min(0.0).doc("Bias learning rate at the start of warmup.");
    s.add_float("box", 7.5).min(0.0).doc("Box (CIoU) loss gain.");
    s.add_float("cls", 0.5).min(0.0).doc("Class (BCE) loss gain.");
    s.add_float("dfl", 1.5).min(0.0).doc("Distribution focal loss gain.");
    s.add_float("clip_grad", 10.0).greater_than(0.0).doc("Gradient norm clipping threshold.");
    s.add_float("multi_scale", 0.0).range(0.0, 0.9).doc(
        "Multi-scale training (Ultralytics' multi_scale): each batch is resized on the train device to a random "
        "size between (1 - multi_scale) and (1 + multi_scale) times the collated size, a multiple of the model's "
        "largest stride (targets are normalised: they stay); 0 = off, 0.5 = Ultralytics' multi_scale=True. Steps "
        "then run eagerly (no cuda_graph). The progress line shows each reported step's size.");
    s.add_bool("ema", true).doc("Keep an exponential moving average of the weights (validated and saved).");
    s.add_int("patience", 100).min(0).doc("Stop after this many epochs without fitness improvement (0 = never).");
    s.add_int("log_every", 10).min(1).doc("Steps between progress lines (losses are read from the device only then).");
    s.add_int("save_period", 0).min(0).doc("Also keep epochN.pt every N epochs (0 = off).");
    s.add_bool("save_async", true).doc(
        "Write checkpoints on a background thread from a CPU copy, so the device trains on while last.pt is "
        "pickled and synced to disk (each file stays atomic: a kill during a write keeps the previous one). "
        "The last epoch, an early stop and an interruption wait for the file.");
    s.add_int("save_every", 0).min(0).doc(
        "Also rewrite last.pt (resumable, mid-epoch) at the first optimizer step after every N batches (0 = only at epoch ends).");
    s.add_int("max_steps", 0).min(0).doc(
        "Stop after this many batches in this process, saving a resumable last.pt (chunked jobs on time-limited machines; 0 = no limit).");
    s.add_string("resume", "").doc(
        "Checkpoint to continue from (set by `yoloflow train --resume RUN_DIR`): weights, EMA, optimizer, scaler, schedule, data position.");
    s.add_int("target_rows", 0).min(0).doc(
        "Rows per image the training targets are padded to: N > 0 = exactly N (static shapes; boxes "
        "beyond N in one image are dropped and counted in a warning); 0 = the batch's fullest image "
        "rounded up to `target_rows_multiple` (no box dropped).");
    s.add_int("target_rows_multiple", 32).min(1).doc(
        "With target_rows 0: round the padded row count up to a multiple of this, so the loss sees "
        "few distinct shapes and the CUDA allocator and kernels settle (1 = the fullest image exactly).");
    s.add_int("profile_every", 0).min(0).doc(
        "Time every Nth step phase by phase (data wait, host-to-device, forward + loss, backward, "
        "optimizer + EMA), waiting for the device at each phase boundary: rows in steps.csv, means in "
        "the epoch summary and results.csv (`profile/...`). 0 = off; sampled steps lose their overlap.");
    s.add_bool("cuda_graph", false).doc(
        "CUDA: capture the training step (forward, loss, backward) as a CUDA graph per input shape "
        "and replay it: one launch instead of thousands from the host. Shapes vary only with the "
        "batch, image size and padded target rows (`target_rows`, `target_rows_multiple`); each new "
        "shape runs `cuda_graph_warmup` steps eagerly, then is captured. Off with data parallel and "
        "`profile_every`; turns `cudnn_benchmark` on; a failed capture falls back to eager steps with a warning.");
    s.add_int("cuda_graph_warmup", 3).min(1).doc("CUDA graphs: eager steps of each new shape before its capture.");
    s.add_int("cuda_graph_rows", 96).min(1).doc(
        "CUDA graphs with target_rows 0: target rows per image the one captured step is built for "
        "(every batch that fits is padded to it); a batch whose fullest image has more boxes runs "
        "eagerly, nothing is dropped (coco128 with mosaic, batch 32: under 4% of batches at 96). Such a "
        "step allocates outside the graph's pool: yolo11n b32 on the H200 peaked at 12.3-12.7 GiB instead "
        "of 5.9; at 192 no coco128 batch ran eagerly, peak 7.2 GiB, 15% fewer images/s (docs/performance.md).");
    s.add_bool("cudnn_benchmark", true).doc("CUDA: let cuDNN benchmark convolution algorithms per input shape.");
    s.add_float("cuda_memory_fraction", 0.0).range(0.0, 1.0).fixed().doc(
        "CUDA: the most of the device's memory the caching allocator may reserve, as a fraction (0 = no cap); "
        "beyond it allocations fail as out of memory (shared GPUs, or proving the out-of-memory recovery).");
    s.add_string("cuda_alloc_conf", "").doc(
        "CUDA: PYTORCH_CUDA_ALLOC_CONF for this process, e.g. \"expandable_segments:True\" (less "
        "fragmentation when shapes vary); empty = the environment's (auto batch then sets expandable "
        "segments). Refused once CUDA is initialised.");
    s.add_bool("tf32", true).doc("CUDA: allow TF32 tensor cores for fp32 convolutions.");
    s.add_string("device", "").doc(
        "\"auto\" (CUDA when available), \"cpu\", \"cuda\", \"cuda:1\"; empty = the pipeline's device.");
    s.add_path("weights").doc(
        "Initial weights (fine-tuning): a state dict (`yoloflow weights import`/`export`, or Python's "
        "torch.save(model.state_dict())) or a yoloflow checkpoint (its EMA weights). With another "
        "number of classes the class head keeps its initial values; every other tensor must fit. "
        "Ignored when resuming. Relative paths are resolved against the pipeline file's folder.");
    s.add_int("cpu_threads", 0).min(0).doc(
        "Threads of LibTorch's CPU operations in this process; 0 = automatic: 1 when training on CUDA "
        "(the step only launches GPU work, and idle OpenMP threads spinning beside the data workers "
        "slowed a CUDA step several-fold), LibTorch's default (all cores) on the CPU.");
    return s;
  }

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
    micro_batch_ = p.get_int("micro_batch");
    device_ = dist::rank_device(pick_train_device(p.get_string("device").empty() ? ctx.device : p.get_string("device")));
    // Before any worker thread runs a parallel LibTorch operation: each thread takes the
    // count on its first one. (Measured on the 2-GPU machine, yolo11n batch 32: 92 img/s with
    // 32 OpenMP threads beside 32 graph workers, 305 with one; docs/performance.md.)
    if (const auto threads = p.get_int("cpu_threads"); threads > 0 || device_.is_cuda()) {
      at::set_num_threads(threads > 0 ? static_cast<int>(threads) : 1);
    }
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
    if (device_.is_cuda()) {
      // cuDNN picks the fastest kernels per shape (shapes stay fixed within an epoch); TF32
      // tensor-core convolutions where fp32 runs.
      at::globalContext().setBenchmarkCuDNN(p.get_bool("cudnn_benchmark"));
      at::globalContext().setAllowTF32CuDNN(p.get_bool("tf32"));
    }
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
    if (!p.get_string("resume").empty()) restore(p.get_string("resume"));
    if (p.get_bool("cuda_graph")) {
      std::string why = CapturedStep::unavailable_reason(device_);
      if (why.empty() && dp_) why = "not with data parallel (the gradient hooks run per step)";
      if (why.empty() && p.get_int("profile_every") > 0) why = "not with profile_every (it times phases inside the step)";
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
        captured_ = std::make_unique<CapturedStep>(device_, static_cast<int>(p.get_int("cuda_graph_warmup")), 1);
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
      epoch_ = epoch;
      step_ = resume_->step_in_epoch;
      next_sequence_ = resume_->next_sequence;
      last_report_step_ = step_;
      const auto& m = resume_->meta;
      images_ = m.value("epoch_images", std::int64_t{0});
      oom_retries_ = m.value("epoch_oom_retries", std::int64_t{0});
      epoch_start_ = Clock::now() - std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(m.value("epoch_seconds", 0.0)));
      const auto l = m.value("epoch_loss_sum", std::vector<double>{0.0, 0.0, 0.0});
      reset_loss_sum(torch::tensor(std::vector<float>(l.begin(), l.end())));
      return;
    }
    epoch_ = epoch;
    epoch_start_ = Clock::now();
    oom_retries_ = 0;
    step_ = 0;
    images_ = 0;
    next_sequence_ = 0;
    last_report_step_ = 0;
    reset_loss_sum(torch::zeros({3}));
  }

  // In place once it exists: a captured step adds into this very tensor.
  void reset_loss_sum(const torch::Tensor& values) {
    if (loss_sum_.defined()) {
      loss_sum_.copy_(values);
    } else {
      loss_sum_ = values.to(device_);
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
    } else if (first_batch_of_epoch_ && batch.size != batch_size_) {
      set_batch(batch.size);  // a batch-size schedule changed it at this epoch boundary
    }
    first_batch_of_epoch_ = false;
    if (results_ && epoch_ == 0 && step_ < 3) write_train_batch(batch);
    const std::int64_t ni = step_ + batches_per_epoch_ * epoch_;  // iteration over the run
    apply_schedule(ni);
    const double multi_scale = p_.get_float("multi_scale");
    step_size_ = multi_scale > 0.0 ? multi_scale_size(static_cast<int>(std::max(batch.height, batch.width)), multi_scale,
                                                      static_cast<int>(largest_stride(model_->head())), ctx_.seed, ni)
                                   : 0;
    if (profile_) profile_->begin(epoch_, step_, global_step_, waited);

    auto pixels = torch::from_blob(batch.pixels.get(), {batch.size, batch.height, batch.width, 3}, torch::kUInt8);
    auto rows = torch::from_blob(batch.targets.data(), {batch.num_boxes(), 6}, torch::kFloat).clone();
    std::int64_t dropped = 0;
    // Padded per image (B, M, 5): a micro-batch's targets are its images' rows, a slice on dim 0.
    // With a captured step, every batch that fits takes its shape.
    torch::Tensor targets = pad_targets(rows, batch.size, p_.get_int("target_rows"), &dropped,
                                        p_.get_int("target_rows_multiple"), captured_ ? p_.get_int("cuda_graph_rows") : 0);
    if (dropped > 0 && dropped_warned_epoch_ != epoch_) {  // once per epoch, not per step
      dropped_warned_epoch_ = epoch_;
      YF_LOG_WARN("train: " << dropped << " box(es) in epoch " << epoch_ + 1 << ", step " << step_ + 1
                            << " beyond target_rows = " << p_.get_int("target_rows")
                            << " per image were dropped; raise target_rows or set it to 0");
    }
    if (captured_ && step_size_ > 0 && !multi_scale_reported_) {
      multi_scale_reported_ = true;
      YF_LOG_WARN("train: multi_scale changes the image size every batch; cuda_graph is not used, steps run eagerly");
    }
    if (captured_ && !captured_->failed() && micro_batch_ == 0 && step_size_ == 0) {
      captured_->run(
          pixels, targets, graph_key(),
          [this](const torch::Tensor& px, const torch::Tensor& tg) { loss_sum_ += train_batch(px, tg); },
          [this] { allocate_missing_grads(); }, batch.pixels);
      if (captured_->failed() && !graph_failure_reported_) {
        graph_failure_reported_ = true;
        YF_LOG_WARN("train: cuda_graph capture failed, training on with eager steps: " << captured_->failure());
      }
    } else {
      targets = targets.to(device_);
      // Out of memory: drop the window's gradients, halve the micro-batch, run the batch again
      // (oom_guard.h says why the window goes and where this stops).
      for (;;) {
        try {
          loss_sum_ += train_batch(pixels, targets);
          break;
        } catch (const std::exception& e) {
          if (!is_out_of_memory(e)) throw;
          recover_from_out_of_memory(e, batch.size);
        }
      }
    }
    ++micro_;
    if (micro_ >= accumulate_) optimizer_step();
    if (profile_) {
      profile_->end_phase(StepProfile::kOptimizer);
      profile_->end_step();
    }

    ++step_;
    ++steps_this_process_;
    ++batches_since_save_;
    images_ += batch.size;
    // The data position is global: W ranks in step have consumed every position below this
    // rank's last one plus W (ranks deal positions r, r+W, ...), whatever W the resume uses.
    const std::uint64_t world = dp_ ? static_cast<std::uint64_t>(dp_->world_size()) : 1;
    for (const auto& s : batch.samples) next_sequence_ = std::max<std::uint64_t>(next_sequence_, s.sequence + world);
    const auto t1 = Clock::now();
    step_time_ += std::chrono::duration<double>(t1 - t0).count();
    if (step_ % log_every_ == 0 || step_ == batches_per_epoch_) log_progress();
    const std::int64_t every = p_.get_int("save_every");
    if (every > 0 && micro_ == 0 && batches_since_save_ >= every) {
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

  // A capture must find every gradient allocated: backward then accumulates into it in place.
  void allocate_missing_grads() {
    for (auto& p : model_->module().parameters()) {
      if (p.requires_grad() && !p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    }
  }

  void interrupted(int epoch) override {
    save_last(/*mid_epoch=*/true);
    if (dist::is_main_process()) checkpoints_->wait();
    YF_LOG_INFO("stopped in epoch " << epoch + 1 << " after batch " << step_ << "; saved " << run_dir_
                                    << "/weights/last.pt");
  }

  void end_epoch(int epoch) override {
    // A resumed run that stopped after the epoch's last batch reaches here without a batch.
    if (!optimizer_) setup_optimizer(resume_ ? resume_->meta.value("batch", std::int64_t{16}) : 16);
    // Data parallel: a rank that skipped unreadable samples ran fewer batches; it takes the
    // missing steps with zero gradients so that its collectives still pair with the others'.
    while (dp_ && step_ < batches_per_epoch_) {
      apply_schedule(step_ + batches_per_epoch_ * epoch_);
      ++step_;
      if (++micro_ >= accumulate_) optimizer_step();
    }
    if (micro_ > 0) optimizer_step();  // the epoch's last partial accumulation
    if (captured_ && !captured_->failed()) {
      YF_LOG_INFO("train: cuda_graph: " << captured_->graphs() << " graph(s) captured; so far "
                                        << captured_->replays() << " steps replayed, " << captured_->eager_steps()
                                        << " eager (warm-up, or more target rows than cuda_graph_rows)");
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - epoch_start_).count();
    total_seconds_ += seconds;
    const auto train_loss = ((dp_ ? dp_->mean(loss_sum_) : loss_sum_) / std::max<std::int64_t>(step_, 1)).to(torch::kCPU);
    if (!dist::is_main_process()) {  // rank 0 validates and writes; the others wait for its verdict
      if (dp_->rank0_decides(false) && ctx_.reporter != nullptr) {
        ctx_.reporter->request_stop("rank 0 stopped the run (early stop)");
      }
      return;
    }
    std::map<std::string, double> row;
    row["epoch"] = epoch + 1;
    row["time"] = total_seconds_;
    row["train/box_loss"] = train_loss[0].item<double>();
    row["train/cls_loss"] = train_loss[1].item<double>();
    row["train/dfl_loss"] = train_loss[2].item<double>();
    const auto& groups = optimizer_->groups();
    for (std::size_t g = 0; g < groups.size() && g < 3; ++g) row["lr/pg" + std::to_string(g)] = groups[g].lr;
    row["images_per_second"] = images_ / std::max(seconds, 1e-9);
    row["imgsz"] = ctx_.imgsz;
    row["batch"] = static_cast<double>(batch_size_);
    row["accumulate"] = static_cast<double>(target_accumulate_);
    for (const auto& kv : scheduled_values()) row[kv.first] = kv.second;
    row["micro_batch"] = static_cast<double>(micro_batch_ > 0 ? std::min(micro_batch_, batch_size_) : batch_size_);
    row["oom_retries"] = static_cast<double>(oom_retries_);
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
      auto m = validate();
      val_seconds = std::chrono::duration<double>(Clock::now() - val_start).count();
      row["metrics/precision(B)"] = m.first.precision;
      row["metrics/recall(B)"] = m.first.recall;
      row["metrics/mAP50(B)"] = m.first.map50;
      row["metrics/mAP50-95(B)"] = m.first.map50_95;
      row["val/box_loss"] = m.second[0];
      row["val/cls_loss"] = m.second[1];
      row["val/dfl_loss"] = m.second[2];
      fitness = m.first.fitness;
      last_metrics_ = m.first;
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
    // Patience as Ultralytics counts it: while the best fitness is still exactly 0, every epoch counts as a best.
    const bool improved = fitness >= 0 && (fitness > best_fitness_ || best_fitness_ == 0.0);
    save_checkpoints(epoch, fitness);
    const auto save_end = Clock::now();
    if (ctx_.reporter != nullptr) ctx_.reporter->epoch_values(row);
    bool early_stop = false;
    if (fitness >= 0) {
      epochs_without_improvement_ = improved ? 0 : epochs_without_improvement_ + std::max(every, 1);
      const auto patience = p_.get_int("patience");
      early_stop = patience > 0 && epochs_without_improvement_ >= patience && !last;
      if (early_stop) checkpoints_->wait();  // the run ends here
      if (early_stop && ctx_.reporter != nullptr) {
        ctx_.reporter->request_stop("early stop: no fitness improvement in the last " +
                                    std::to_string(epochs_without_improvement_) + " epochs (patience " +
                                    std::to_string(patience) + ")");
      }
    }
    YF_LOG_INFO("epoch " << epoch + 1 << "/" << ctx_.epochs << " done in " << format_seconds(seconds)
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
    std::ostringstream os;
    os << "trained " << results_->rows().size() << " epochs in " << format_seconds(total_seconds_)
       << "; results in " << run_dir_ << " (results.csv, results.png, weights/last.pt, weights/best.pt)\n"
       << "final validation: P " << last_metrics_.precision << "  R " << last_metrics_.recall << "  mAP50 "
       << last_metrics_.map50 << "  mAP50-95 " << last_metrics_.map50_95 << "\n";
    return os.str();
  }

 private:
  void open_validation(const Params& p, const StageContext& ctx) {
    json source_spec = {{"plugin", "yolo_dataset"},
                        {"params", {{"data", p.get_string("data")}, {"split", p.get_string("val_split")}}}};
    val_source_ = make_component<DataSource>(Kind::Source, source_spec, ctx.node + ".validation.source", ctx);
    val_imgsz_ = ctx.imgsz;
    names_ = val_source_->info().names;
    YF_LOG_INFO("validation: " << val_source_->size() << " images of split '" << p.get_string("val_split") << "'");
  }

  // Batch-dependent settings: accumulation to the nominal batch, batches per epoch, the
  // weight-decay scale and the warmup length (in batches).
  void set_batch(std::int64_t batch) {
    const std::int64_t nbs = p_.get_int("nominal_batch");
    batch_size_ = batch;
    const std::int64_t world = dp_ ? dp_->world_size() : 1;  // each step sees batch x world images
    accumulate_ratio_ = static_cast<double>(nbs) / static_cast<double>(batch * world);
    target_accumulate_ = std::max<std::int64_t>(std::llround(accumulate_ratio_), 1);
    accumulate_ = target_accumulate_;
    // The graph runner tells how many samples an epoch has; the last batch may be partial.
    expected_images_ = ctx_.samples_per_epoch;
    batches_per_epoch_ = std::max<std::int64_t>((expected_images_ + batch - 1) / batch, 1);
    if (!optimizer_) return;
    auto& g = optimizer_->groups();
    g[0].weight_decay = base_weight_decay_ * static_cast<double>(batch * world * target_accumulate_) / nbs;
    schedule_ = std::make_unique<LrSchedule>(schedule_options_, batches_per_epoch_);
    YF_LOG_INFO("batch " << batch << " x accumulate " << target_accumulate_ << " (nominal " << nbs << "), "
                         << batches_per_epoch_ << " batches an epoch");
  }

  void setup_optimizer(std::int64_t batch) {
    const std::int64_t nbs = p_.get_int("nominal_batch");
    const std::int64_t world = dp_ ? dp_->world_size() : 1;
    set_batch(batch);
    log_every_ = p_.get_int("log_every");
    std::vector<ParamGroup> groups(3);
    groups[0].name = "weights";
    groups[1].name = "norm";
    groups[2].name = "bias";
    for (auto& np : model_->module().named_parameters()) {
      if (!np.value().requires_grad()) continue;
      const auto& name = np.key();
      if (name.size() >= 5 && name.compare(name.size() - 5, 5, ".bias") == 0) groups[2].params.push_back(np.value());
      else if (np.value().dim() == 1) groups[1].params.push_back(np.value());
      else groups[0].params.push_back(np.value());
    }
    optimizer_ = make_component<Optimizer>(Kind::Optimizer, p_.get_json("optimizer"), ctx_.node + ".params.optimizer", ctx_);
    OptimizerSetup setup;
    setup.nc = model_->head().nc;
    setup.nominal_batch = nbs;
    setup.total_iterations = static_cast<std::int64_t>(std::ceil(
        static_cast<double>(std::max<std::int64_t>(expected_images_ * world, batch * world)) /
        std::max<std::int64_t>(batch * world, nbs))) * ctx_.epochs;
    optimizer_->setup(std::move(groups), setup);
    // Weight decay applies to the weights group only, scaled like Ultralytics' recipe.
    auto& g = optimizer_->groups();
    base_weight_decay_ = g[0].weight_decay;
    const double wd_scale = static_cast<double>(batch * world * target_accumulate_) / nbs;
    g[0].weight_decay *= wd_scale;
    g[1].weight_decay = 0.0;
    g[2].weight_decay = 0.0;
    for (auto& grp : g) {
      if (grp.initial_lr == 0.0) grp.initial_lr = grp.lr;
    }
    base_momentum_ = g[0].momentum;
    LrScheduleOptions o;
    o.epochs = ctx_.epochs;
    o.lrf = p_.get_float("lrf");
    o.cosine = p_.get_bool("cos_lr");
    o.warmup_epochs = p_.get_float("warmup_epochs");
    o.warmup_momentum = p_.get_float("warmup_momentum");
    o.warmup_bias_lr = p_.get_float("warmup_bias_lr");
    // Ultralytics' auto rule also drops the bias warmup (too high for Adam-type updates).
    if (p_.get_json("optimizer").value("plugin", std::string()) == "auto") o.warmup_bias_lr = 0.0;
    schedule_options_ = o;
    schedule_ = std::make_unique<LrSchedule>(o, batches_per_epoch_);
    if (resume_) {
      // Empty when the previous process stopped before its first batch: nothing to restore.
      if (!resume_->optimizer.empty()) optimizer_->load_state(to_map(resume_->optimizer));
      // Gradients accumulated before the stop, so the pending optimizer step sees them all.
      const auto grads = to_map(resume_->grads);
      for (auto& np : model_->module().named_parameters()) {
        const auto it = grads.find(np.key());
        if (it != grads.end()) np.value().mutable_grad() = it->second.to(device_).clone();
      }
      micro_ = resume_->meta.value("micro", std::int64_t{0});
    }
    YF_LOG_INFO("optimizer: " << optimizer_->description() << "; batch " << batch
                              << (world > 1 ? " x " + std::to_string(world) + " ranks" : std::string())
                              << " x accumulate " << target_accumulate_ << " (nominal " << nbs << ")");
  }

  // Forward and backward of one batch, in micro-batches; returns the batch's mean losses (box,
  // cls, dfl). With several chunks in a one-process run the gradient is the whole batch's loss
  // normaliser exactly (micro_batches.h): each chunk backpropagates its unnormalised loss over a
  // provisional normaliser K (the first chunk's target-score sum scaled to the batch, for a
  // well-scaled backward), and once every chunk's score sum is known the batch's gradient is
  // rescaled by K / max(score sum, 1). The window's earlier gradients are set aside meanwhile
  // (a second gradient-sized buffer while accumulating). Data parallel: the reducer sends each
  // chunk's gradients during its backward, before the sum is known, so there each chunk keeps
  // its own normaliser with the floor scaled to its share.
  torch::Tensor train_batch(const torch::Tensor& pixels, const torch::Tensor& targets) {
    const std::int64_t batch = pixels.size(0);
    const auto chunks = micro_batches(batch, micro_batch_);
    const bool exact = chunks.size() > 1 && !dp_;
    // NHWC uint8 on the device (a quarter of the float images); each chunk converts its own
    // images, so the float copy of only one chunk exists at a time.
    const auto device_pixels = pixels.to(device_);
    if (profile_) profile_->end_phase(StepProfile::kHostToDevice);
    std::vector<torch::Tensor> params, held;
    if (exact) {
      for (auto& p : model_->module().parameters()) {
        params.push_back(p);
        held.push_back(p.grad());
        p.mutable_grad() = torch::Tensor();
      }
    }
    torch::Tensor sums = torch::zeros({3}, torch::TensorOptions().device(device_));  // unnormalised losses
    torch::Tensor items = torch::zeros({3}, torch::TensorOptions().device(device_));
    torch::Tensor score_sum = torch::zeros({}, torch::TensorOptions().device(device_));
    torch::Tensor provisional;  // K
    for (std::size_t c = 0; c < chunks.size(); ++c) {
      const auto& chunk = chunks[c];
      const double share = static_cast<double>(chunk.size) / static_cast<double>(batch);
      LossResult loss;
      {
        // NHWC memory seen as NCHW: a channels-last tensor.
        auto images = device_pixels.narrow(0, chunk.start, chunk.size).permute({0, 3, 1, 2}).to(torch::kFloat).div_(255.0);
        if (step_size_ > 0) images = resize_for_multi_scale(images);
        auto scope = precision_->autocast(device_);
        auto levels = model_->forward_train(images);
        loss = (*loss_)(levels, targets.narrow(0, chunk.start, chunk.size), share);
      }
      if (profile_) profile_->end_phase(StepProfile::kForward);
      torch::Tensor objective = loss.total;
      if (exact) {
        // total = images(chunk) * sums(chunk) / max(score sum(chunk), share)
        const auto used = loss.score_sum.clamp_min(share);
        if (c == 0) provisional = (loss.score_sum / share).clamp_min(1.0);
        objective = loss.total * (used / (share * provisional));  // images(batch) * sums(chunk) / K
        sums += loss.items * used;
        score_sum += loss.score_sum;
      } else {
        items += loss.items * share;
      }
      // The window's last backward reduces across ranks: the last chunk of its last batch.
      if (dp_) dp_->before_backward(micro_ + 1 >= accumulate_ && c + 1 == chunks.size());
      precision_->scale_loss(objective).backward();
      if (profile_) profile_->end_phase(StepProfile::kBackward);
    }
    if (!exact) return items;
    torch::NoGradGuard no_grad;
    const auto normaliser = score_sum.clamp_min(1.0);
    const auto rescale = provisional / normaliser;
    for (std::size_t i = 0; i < params.size(); ++i) {
      auto& p = params[i];
      if (p.grad().defined()) {
        p.mutable_grad().mul_(rescale.to(p.grad().dtype()));
        if (held[i].defined()) p.mutable_grad().add_(held[i]);
      } else if (held[i].defined()) {
        p.mutable_grad() = held[i];
      }
    }
    return sums / normaliser;
  }

  void recover_from_out_of_memory(const std::exception& e, std::int64_t batch) {
    const std::string cause = short_message(e);
    if (dp_) {
      throw Error("train: out of memory in data-parallel training (rank " + std::to_string(dist::current_env().rank) +
                  "); a rank cannot retry alone while the others wait in the gradient all-reduce. Set "
                  "stages.<train>.params.micro_batch below the batch (the value that fits one GPU). Cause: " +
                  cause);
    }
    const std::int64_t next = halved_micro_batch(micro_batch_, batch, cause);
    // Partial contributions of the failed chunk may be in any .grad: the window restarts.
    for (auto& np : model_->module().named_parameters()) np.value().mutable_grad() = torch::Tensor();
    micro_ = 0;
    release_cached_cuda_memory(device_);
    ++oom_retries_;
    YF_LOG_WARN("train: out of memory in epoch " << epoch_ + 1 << ", batch " << step_ + 1 << " (" << cause
                                                 << "); retrying it with micro_batch " << next << " (was "
                                                 << (micro_batch_ > 0 ? micro_batch_ : batch)
                                                 << "); this window's accumulated gradients were dropped");
    micro_batch_ = next;
  }

  void apply_schedule(std::int64_t ni) {
    auto& groups = optimizer_->groups();
    const double f = schedule_->factor(epoch_);
    if (schedule_->warming_up(ni)) {
      // Towards the unrounded ratio, rounded half to even each step, as Ultralytics ramps it.
      accumulate_ = std::max<std::int64_t>(
          1, static_cast<std::int64_t>(std::nearbyint(schedule_->ramp(ni, 1.0, accumulate_ratio_))));
      for (std::size_t j = 0; j < groups.size(); ++j) {
        const double start = (j == 2) ? schedule_->options().warmup_bias_lr : 0.0;
        groups[j].lr = schedule_->ramp(ni, start, groups[j].initial_lr * f);
        groups[j].momentum = schedule_->ramp(ni, schedule_->options().warmup_momentum, base_momentum_);
      }
    } else {
      accumulate_ = target_accumulate_;
      for (auto& g : groups) {
        g.lr = g.initial_lr * f;
        g.momentum = base_momentum_;
      }
    }
  }

  void optimizer_step() {
    if (dp_) dp_->before_step();  // gradients summed over the ranks
    std::vector<torch::Tensor> grads;
    for (auto& g : optimizer_->groups()) {
      for (auto& p : g.params) {
        if (p.grad().defined()) grads.push_back(p.grad());
      }
    }
    torch::Tensor found_inf = precision_->unscale(grads);
    clip_gradients(grads, p_.get_float("clip_grad"));
    optimizer_->step(found_inf);
    precision_->update(found_inf);
    if (captured_) {
      at::_foreach_zero_(grads);  // captured graphs accumulate into these tensors; one launch, not ~250
    } else {
      for (auto& g : optimizer_->groups()) {
        for (auto& p : g.params) p.mutable_grad() = torch::Tensor();
      }
    }
    if (ema_) ema_->update(model_->module());
    micro_ = 0;
    ++global_step_;
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
    const std::string path = run_dir_ + "/train_batch" + std::to_string(step_) + ".jpg";
    if (!cv::imwrite(path, draw_sample_grid(samples, names_, 1920))) YF_LOG_WARN("train: cannot write " << path);
  }

  // Clip the global gradient norm without reading it on the host.
  static void clip_gradients(std::vector<torch::Tensor>& grads, double max_norm) {
    if (grads.empty()) return;
    // Multi-tensor kernels: one launch per op for all gradients, not ~250 (yolo11n).
    const auto total = torch::stack(at::_foreach_norm(grads)).norm();
    const auto coef = (max_norm / (total + 1e-6)).clamp_max(1.0);
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
    at::_foreach_mul_(grads, coef);
#else
    for (auto& g : grads) g.mul_(coef);  // LibTorch < 2.1: no _foreach_mul_ with a tensor scalar
#endif
  }

  // As Ultralytics: scale = size / longest side, each side rounded up to a multiple of the
  // largest stride, bilinear.
  torch::Tensor resize_for_multi_scale(const torch::Tensor& images) const {
    const std::int64_t stride = largest_stride(model_->head()), h = images.size(2), w = images.size(3);
    const double scale = static_cast<double>(step_size_) / static_cast<double>(std::max(h, w));
    auto side = [&](std::int64_t x) {
      return static_cast<std::int64_t>(std::ceil(static_cast<double>(x) * scale / static_cast<double>(stride))) * stride;
    };
    if (side(h) == h && side(w) == w) return images;
    namespace F = torch::nn::functional;
    return F::interpolate(images, F::InterpolateFuncOptions()
                                      .size(std::vector<std::int64_t>{side(h), side(w)})
                                      .mode(torch::kBilinear)
                                      .align_corners(false));
  }

  void log_progress() {
    const double seconds = std::chrono::duration<double>(Clock::now() - epoch_start_).count();
    const auto l = (loss_sum_ / std::max<std::int64_t>(step_, 1)).to(torch::kCPU);
    const double ips = images_ / std::max(seconds, 1e-9);
    const std::int64_t left = std::max<std::int64_t>(batches_per_epoch_ - step_, 0) +
                              batches_per_epoch_ * (ctx_.epochs - epoch_ - 1);
    const double eta = (seconds / std::max<std::int64_t>(step_, 1)) * left;
    // Host seconds per batch since the last report: waiting for the graph vs in the step (on
    // CUDA the step's launches run ahead; reading the losses above waited for them, so the
    // window's total is right).
    const double window = static_cast<double>(std::max<std::int64_t>(step_ - last_report_step_, 1));
    const double wait_ms = 1e3 * data_wait_ / window, step_ms = 1e3 * step_time_ / window;
    std::ostringstream os;
    os << std::fixed << std::setprecision(4) << "epoch " << epoch_ + 1 << "/" << ctx_.epochs << "  step " << step_
       << "/" << batches_per_epoch_ << "  box " << l[0].item<double>() << "  cls " << l[1].item<double>()
       << "  dfl " << l[2].item<double>() << std::setprecision(1) << "  " << ips << " img/s  data wait " << wait_ms
       << " ms  step " << step_ms << " ms  ETA " << format_seconds(eta);
    if (step_size_ > 0) os << "  size " << step_size_;
    YF_LOG_INFO(os.str());
    if (ctx_.reporter != nullptr) {
      StepEvent ev;
      ev.epoch = epoch_;
      ev.step = step_ - 1;
      ev.steps_in_epoch = batches_per_epoch_;
      ev.global_step = global_step_;
      ev.images_per_second = ips;
      ev.eta_seconds = eta;
      ev.values["train/box_loss"] = l[0].item<double>();
      ev.values["train/cls_loss"] = l[1].item<double>();
      ev.values["train/dfl_loss"] = l[2].item<double>();
      const auto& groups = optimizer_->groups();
      for (std::size_t g = 0; g < groups.size() && g < 3; ++g) ev.values["lr/pg" + std::to_string(g)] = groups[g].lr;
      ev.values["time/data_wait"] = wait_ms / 1e3;
      ev.values["time/step"] = step_ms / 1e3;
      ev.values["loss_scale"] = precision_->scale();
      ctx_.reporter->step(ev);
    }
    data_wait_ = step_time_ = 0.0;
    last_report_step_ = step_;
  }

  // Validation on the EMA weights: returns metrics and mean val losses (box, cls, dfl).
  std::pair<MetricsResult, std::array<double, 3>> validate() {
    std::vector<torch::Tensor> saved;
    if (ema_) saved = ema_->swap_into(model_->module());
    model_->module().eval();
    torch::NoGradGuard no_grad;
    // cuDNN's heuristics, not benchmarking, for validation's convolutions: with a captured step the
    // first validation on the H200 fell from 4.6-5.8 s to 2.2 s (docs/performance.md, session 9,
    // "Validation time and memory"). Restored on the way out; the graph keeps its algorithms.
    struct BenchmarkOff {
      bool was = at::globalContext().benchmarkCuDNN();
      BenchmarkOff() { at::globalContext().setBenchmarkCuDNN(false); }
      ~BenchmarkOff() { at::globalContext().setBenchmarkCuDNN(was); }
    } benchmark_off;
    DetectionMetrics metrics(model_->head().nc);
    NmsOptions nms;
    nms.conf = p_.get_float("val_conf");
    nms.iou = p_.get_float("val_iou");
    nms.max_det = static_cast<int>(p_.get_int("max_det"));
    nms.multi_label = true;
    if (!val_loader_) {
      ValidationOptions vo;
      vo.imgsz = val_imgsz_;
      vo.batch = p_.get_int("val_batch");
      vo.rect = p_.get_bool("rect");
      vo.stride = static_cast<int>(largest_stride(model_->head()));
      val_loader_ = std::make_unique<ValidationLoader>(host_registry(), *val_source_, vo, ctx_.node + ".validation");
    }
    torch::Tensor loss_sum = torch::zeros({3});
    std::int64_t batches = 0;
    for (std::size_t b = 0; b < val_loader_->batches(); ++b) {
      const ValidationBatch vb = val_loader_->load(b);
      if (vb.samples.empty()) continue;
      loss_sum += validate_batch(*model_, device_, precision_.get(), loss_.get(), vb.pixels, vb.rows, nms, metrics);
      ++batches;
    }
    model_->module().train();
    if (ema_) ema_->restore(model_->module(), saved);
    const auto mean = loss_sum / std::max<std::int64_t>(batches, 1);
    return {metrics.compute(), {mean[0].item<double>(), mean[1].item<double>(), mean[2].item<double>()}};
  }

  // The state a resumed run needs. At an epoch end: the next epoch, position 0.
  Checkpoint make_checkpoint(bool mid_epoch, double fitness) const {
    Checkpoint c;
    for (const auto& kv : model_->module().named_parameters()) c.model.emplace_back(kv.key(), kv.value());
    for (const auto& kv : model_->module().named_buffers()) c.model.emplace_back(kv.key(), kv.value());
    if (ema_) {
      c.ema = ema_->state();
      c.ema_updates = ema_->updates();
    }
    if (optimizer_) c.optimizer = optimizer_->state();
    c.precision = precision_->state();
    c.global_step = global_step_;
    c.best_fitness = best_fitness_;
    c.meta = {{"architecture", model_->architecture()}, {"nc", model_->head().nc}, {"names", names_},
              {"imgsz", ctx_.imgsz}, {"epochs", ctx_.epochs}, {"fitness", fitness},
              {"total_seconds", total_seconds_}, {"epochs_without_improvement", epochs_without_improvement_},
              {"seed", ctx_.seed}, {"batch", batch_size_}, {"micro_batch", micro_batch_}};
    // What `yoloflow predict` rebuilds the network from, without the user restating it.
    c.meta["model"] = model_spec_;
    if (!pipeline_.is_null()) c.meta["pipeline"] = pipeline_;
    if (mid_epoch) {
      c.epoch = epoch_;
      c.step_in_epoch = step_;
      c.next_sequence = next_sequence_;
      const auto l = loss_sum_.to(torch::kCPU).to(torch::kDouble);
      c.meta["epoch_loss_sum"] = std::vector<double>{l[0].item<double>(), l[1].item<double>(), l[2].item<double>()};
      c.meta["epoch_images"] = images_;
      c.meta["epoch_oom_retries"] = oom_retries_;
      c.meta["epoch_seconds"] = std::chrono::duration<double>(Clock::now() - epoch_start_).count();
      c.meta["micro"] = micro_;
      if (micro_ > 0 && optimizer_) {
        for (const auto& np : model_->module().named_parameters()) {
          if (np.value().grad().defined()) c.grads.emplace_back(np.key(), np.value().grad());
        }
      }
    } else {
      c.epoch = epoch_ + 1;
    }
    return c;
  }

  void save_last(bool mid_epoch) {
    if (!dist::is_main_process()) return;  // data parallel: rank 0 writes
    checkpoints_->save(make_checkpoint(mid_epoch, -1.0), {run_dir_ + "/weights/last.pt"});
    batches_since_save_ = 0;
  }

  // Continues from a checkpoint written by this sink (same architecture and class count).
  void restore(const std::string& path) {
    auto ck = std::make_unique<Checkpoint>(load_checkpoint(path));
    const std::string arch = ck->meta.value("architecture", std::string());
    if (arch != model_->architecture() || ck->meta.value("nc", -1) != model_->head().nc) {
      throw InvalidInput(path + " holds a " + arch + " with nc=" + std::to_string(ck->meta.value("nc", -1)) +
                         "; this pipeline trains a " + model_->architecture() + " with nc=" +
                         std::to_string(model_->head().nc));
    }
    torch::NoGradGuard no_grad;
    const auto weights = to_map(ck->model);
    auto copy_into = [&](const std::string& name, torch::Tensor& dst) {
      const auto it = weights.find(name);
      if (it == weights.end()) throw InvalidInput(path + ": no entry '" + name + "' for the model");
      dst.copy_(it->second);
    };
    for (auto& np : model_->module().named_parameters()) copy_into(np.key(), np.value());
    for (auto& nb : model_->module().named_buffers()) copy_into(nb.key(), nb.value());
    if (ema_ && !ck->ema.empty()) ema_->load_state(to_map(ck->ema), ck->ema_updates);
    precision_->load_state(to_map(ck->precision));
    global_step_ = ck->global_step;
    best_fitness_ = ck->best_fitness;
    total_seconds_ = ck->meta.value("total_seconds", 0.0);
    epochs_without_improvement_ = ck->meta.value("epochs_without_improvement", 0);
    // A micro-batch that an out-of-memory error lowered stays lowered (a smaller one in the
    // pipeline wins).
    if (const auto saved = ck->meta.value("micro_batch", std::int64_t{0});
        saved > 0 && (micro_batch_ <= 0 || saved < micro_batch_)) {
      micro_batch_ = saved;
      YF_LOG_INFO("resume: micro_batch " << micro_batch_ << " (from " << path << ")");
    }
    if (results_) results_->load(ck->epoch);
    YF_LOG_INFO("resuming from " << path << ": epoch " << ck->epoch + 1 << ", batch " << ck->step_in_epoch
                                 << " (sample position " << ck->next_sequence << "), " << global_step_
                                 << " optimizer steps so far");
    resume_ = std::move(ck);
  }

  // The pipeline's per-epoch schedules as they stand this epoch, recorded in results.csv.
  std::map<std::string, double> scheduled_values() const { return ctx_.schedule; }

  void save_checkpoints(int epoch, double fitness) {
    // A tie rewrites best.pt with the later weights, as Ultralytics does.
    const bool improved = fitness >= 0 && fitness >= best_fitness_;
    if (improved) best_fitness_ = fitness;
    std::vector<std::string> paths{run_dir_ + "/weights/last.pt"};
    if (improved) paths.push_back(run_dir_ + "/weights/best.pt");
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
  std::unique_ptr<DataSource> val_source_;
  std::unique_ptr<ValidationLoader> val_loader_;  // made at the first validation (needs the model's stride)
  int val_imgsz_ = 640;                            // what the validation source sizes images to
  std::unique_ptr<LrSchedule> schedule_;
  std::unique_ptr<ResultsCsv> results_;
  std::unique_ptr<StepProfile> profile_;  // rank 0 only, like results_
  std::unique_ptr<CapturedStep> captured_;  // cuda_graph on
  std::unique_ptr<CheckpointWriter> checkpoints_;
  bool graph_failure_reported_ = false;
  std::vector<std::string> names_;
  json model_spec_;  // {"plugin", "params"} as built, nc resolved
  json pipeline_;    // the run folder's resolved pipeline.json; null when there is none
  LossGains gains_;
  std::string run_dir_;
  torch::Tensor loss_sum_;
  MetricsResult last_metrics_;
  Clock::time_point epoch_start_;
  int epoch_ = 0;
  int dropped_warned_epoch_ = -1;  // epoch whose target-row overflow was already reported
  std::int64_t step_ = 0, images_ = 0, micro_ = 0, global_step_ = 0;
  std::int64_t accumulate_ = 1, target_accumulate_ = 1, batches_per_epoch_ = 1, log_every_ = 10;
  double accumulate_ratio_ = 1.0;  // nominal batch / (batch x ranks), before rounding
  std::int64_t micro_batch_ = 0;  // images per forward + backward; 0 = the whole batch
  std::int64_t oom_retries_ = 0;  // out-of-memory retries this epoch
  std::int64_t batch_size_ = 0, steps_this_process_ = 0, batches_since_save_ = 0, last_report_step_ = 0;
  std::uint64_t next_sequence_ = 0;
  int epochs_without_improvement_ = 0;
  bool first_batch_of_epoch_ = true;
  bool budget_spent_ = false;
  double base_weight_decay_ = 0.0;
  LrScheduleOptions schedule_options_;
  double data_wait_ = 0.0, step_time_ = 0.0;
  int step_size_ = 0;  // multi-scale: this batch's image size (0 = as collated)
  bool multi_scale_reported_ = false;
  Clock::time_point last_batch_end_;
  std::unique_ptr<Checkpoint> resume_;  // set while a resumed run has not yet passed its first epoch
  double base_momentum_ = 0.937, best_fitness_ = -1.0, total_seconds_ = 0.0;
};

}  // namespace

void register_train_sink(Registry& registry) {
  add_builtin_sink<TrainSink>(registry, "train",
      "Trains a detector on the batches it receives (YOLO11 recipe: loss, accumulation to a nominal batch, "
      "warmup, lr schedule, gradient clipping, EMA), validates each epoch and writes results and checkpoints.");
}

}  // namespace yoloflow::core
