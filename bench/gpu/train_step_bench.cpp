// yoloflow_bench_train_step: the training step alone, as REFERENCE.md measured Ultralytics'
// (a batch already in memory: random pixels, `--boxes` boxes per image; loss, backward,
// optimizer with gradient clipping, EMA, precision strategy), with the trainer's own parts
// (TrainingPartsBuilder) and step engine: each timed call is one batch of the trainer's step
// (schedule, padded targets, forward, backward, optimizer step, the ema callback's update),
// i.e. exactly what a training run does per batch once the data is there. Runs the eager step first as the baseline, then each other configuration,
// in one process, and prints img/s, ms/step and the ratio to the baseline.
//
//   yoloflow_bench_train_step --data DATA.yaml [--model n] [--batch 32] [--imgsz 640]
//       [--steps 60] [--warmup 10] [--precision amp_fp16] [--boxes 8] [--device cuda]
//       [--nominal-batch B] [--configs eager,graph,checkpoint] [--task segment]
//       [--target-rows R] [--profile N]
// `--task segment` trains yolo11<scale>-seg with its loss on the same boxes, each filled as its
// mask (the overlap layout at a quarter of the size). `--profile N` times N more eager steps of
// the first configuration with LibTorch's profiler and prints the device time per kernel (a
// CUDA build of LibTorch 2 or later).
// `checkpoint` is the eager step with activation checkpointing of backbone and neck (the
// model's checkpoint_backbone/checkpoint_neck): its peak memory against eager's is the saving.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <set>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <torch/cuda.h>
#include <torch/torch.h>

#include "runtime/plugin/host_registry.h"
#include "runtime/plugin/plugin_manager.h"
#include "training/builtin_components.h"
#include "training/components/batch_targets.h"
#include "training/device/train_device.h"
#include "training/trainer/optimizer_schedule.h"
#include "training/step/step_engine.h"
#include "training/step/train_state.h"
#include "training/step/training_parts.h"
#include "yoloflow/callback.h"
#include "yoloflow/error.h"
#include "yoloflow/training_view.h"

#ifdef YOLOFLOW_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/autograd/profiler_kineto.h>
#define YOLOFLOW_BENCH_PROFILER 1
#endif
#endif

namespace {

using namespace yoloflow;

struct Options {
  std::string data, model = "n", precision = "amp_fp16", device = "cuda", configs = "eager,graph", task = "detect";
  int batch = 32, imgsz = 640, steps = 60, warmup = 10, boxes = 8, nominal_batch = 0, target_rows = 0, profile = 0;
  std::int64_t mask_chunk = 0;  // 0: the segmentation loss's default
  bool segment() const { return task == "segment"; }
};

// One synthetic batch: random pixels, `boxes` random boxes of random classes per image.
Batch make_batch(const Options& o, std::uint64_t seed) {
  Batch b;
  b.size = o.batch;
  b.height = b.width = o.imgsz;
  const std::size_t bytes = static_cast<std::size_t>(o.batch) * o.imgsz * o.imgsz * 3;
  b.pixels = std::shared_ptr<std::uint8_t>(new std::uint8_t[bytes], std::default_delete<std::uint8_t[]>());
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < bytes; ++i) b.pixels.get()[i] = static_cast<std::uint8_t>(rng());
  std::uniform_real_distribution<float> u(0.1f, 0.9f), s(0.02f, 0.3f);
  TargetArray& boxes = b.boxes();
  boxes.values.reserve(static_cast<std::size_t>(o.batch) * o.boxes * 6);
  for (int i = 0; i < o.batch; ++i) {
    SampleInfo info;
    info.sequence = static_cast<std::uint64_t>(i);
    b.samples.push_back(info);
    for (int k = 0; k < o.boxes; ++k) {
      boxes.values.insert(boxes.values.end(),
                          {static_cast<float>(i), static_cast<float>(rng() % 80), u(rng), u(rng), s(rng), s(rng)});
    }
  }
  boxes.shape = {static_cast<std::int64_t>(boxes.values.size() / 6), 6};
  if (o.segment()) {
    // Each box filled as its instance's mask, the later on top (the overlap layout: k + 1).
    const std::int64_t side = o.imgsz / 4;
    TargetArray masks;
    masks.shape = {b.size, side, side};
    masks.values.assign(static_cast<std::size_t>(b.size * side * side), 0.0f);
    for (int i = 0; i < o.batch; ++i) {
      for (int k = 0; k < o.boxes; ++k) {
        const float* r = boxes.values.data() + (static_cast<std::size_t>(i) * o.boxes + k) * 6;
        const auto lo = [&](float c, float s) { return std::clamp<std::int64_t>(static_cast<std::int64_t>((c - s / 2) * side), 0, side); };
        const auto hi = [&](float c, float s) { return std::clamp<std::int64_t>(static_cast<std::int64_t>((c + s / 2) * side), 0, side); };
        for (std::int64_t y = lo(r[3], r[5]); y < hi(r[3], r[5]); ++y) {
          for (std::int64_t x = lo(r[2], r[4]); x < hi(r[2], r[4]); ++x) {
            masks.values[static_cast<std::size_t>((i * side + y) * side + x)] = static_cast<float>(k + 1);
          }
        }
      }
    }
    b.targets["image_masks"] = std::move(masks);
  }
  return b;
}

void sync(const torch::Device& d) {
  if (d.is_cuda()) torch::cuda::synchronize(d.index());
}

struct Result {
  double ms_per_step = 0.0, peak_reserved_gib = 0.0, peak_allocated_gib = 0.0;
  double box = 0.0, cls = 0.0, dfl = 0.0, seg = 0.0;  // mean training losses over the timed steps
};

// What the ema callback sees of the training: the model (its hook reads and writes it in place).
class BenchView final : public TrainingView {
 public:
  explicit BenchView(torch::nn::Module& model) : model_(model) {}
  torch::nn::Module& model() override { return model_; }
  const std::vector<ParamGroup>& param_groups() const override { return groups_; }
  TrainProgress progress() const override { return {}; }

 private:
  torch::nn::Module& model_;
  std::vector<ParamGroup> groups_;
};

// N more steps under LibTorch's profiler: the device time of each kernel (summed over the
// steps, per step), the largest first, and how many launches it took.
void profile_steps(const Options& o, const std::function<void()>& step) {
#ifdef YOLOFLOW_BENCH_PROFILER
  namespace prof = torch::profiler::impl;
  const prof::ProfilerConfig config(prof::ProfilerState::KINETO);
  const std::set<prof::ActivityType> activities{prof::ActivityType::CPU, prof::ActivityType::CUDA};
  torch::autograd::profiler::prepareProfiler(config, activities);
  torch::autograd::profiler::enableProfiler(config, activities);
  for (int i = 0; i < o.profile; ++i) step();
  torch::cuda::synchronize();
  const auto result = torch::autograd::profiler::disableProfiler();
  std::map<std::string, std::pair<double, int>> kernels;  // name -> (ns, launches)
  double total = 0.0;
  for (const auto& e : result->events()) {
    if (e.deviceType() != c10::DeviceType::CUDA) continue;
    auto& k = kernels[e.name().substr(0, 110)];
    k.first += static_cast<double>(e.durationNs());
    ++k.second;
    total += static_cast<double>(e.durationNs());
  }
  std::vector<std::pair<std::string, std::pair<double, int>>> sorted(kernels.begin(), kernels.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  std::printf("profile: %d eager steps, device time %.2f ms a step in %zu kinds of kernel\n", o.profile,
              total / 1e6 / o.profile, kernels.size());
  std::printf("%10s %7s %9s  %s\n", "ms/step", "share", "launches", "kernel");
  for (std::size_t i = 0; i < sorted.size() && i < 40; ++i) {
    const auto& [name, v] = sorted[i];
    std::printf("%10.3f %6.1f%% %9.1f  %s\n", v.first / 1e6 / o.profile, 100.0 * v.first / total,
                static_cast<double>(v.second) / o.profile, name.c_str());
  }
  std::fflush(stdout);
#else
  (void)step;
  std::printf("profile: needs a CUDA build of LibTorch 2 or later; left out (%d steps)\n", o.profile);
#endif
}

// config: eager, graph or checkpoint, "+kernels" after it: the segmentation loss's mask term by
// its CUDA kernels (mask_backend kernels) instead of tensor operations.
Result measure(const Options& o, const std::string& config_name, bool profile) {
  const bool kernel_masks = config_name.size() > 8 && config_name.compare(config_name.size() - 8, 8, "+kernels") == 0;
  const std::string config = kernel_masks ? config_name.substr(0, config_name.size() - 8) : config_name;
  const bool graph = config == "graph", checkpoint = config == "checkpoint";
  json seg_loss_params = json::object();
  if (o.mask_chunk > 0) seg_loss_params["mask_chunk"] = o.mask_chunk;
  if (kernel_masks) seg_loss_params["mask_backend"] = "kernels";
  const json given = {{"data", o.data},
                      {"model",
                       {{"plugin", "yolo11"},
                        {"params",
                         {{"scale", o.model},
                          {"task", o.task},
                          {"checkpoint_backbone", checkpoint},
                          {"checkpoint_neck", checkpoint}}}}},
                      {"loss",
                       o.segment() ? json{{"plugin", "yolo11_segmentation"}, {"params", seg_loss_params}}
                                   : json{{"plugin", "yolo11_detection"}}},
                      {"precision", {{"plugin", o.precision}}},
                      {"optimizer", {{"plugin", "sgd"}}},
                      {"scheduler", {{"plugin", "linear"}}},
                      {"nominal_batch", o.nominal_batch > 0 ? o.nominal_batch : o.batch},
                      {"cudnn_benchmark", true},
                      {"cuda_graph", graph},
                      {"target_rows", o.target_rows > 0 ? o.target_rows : o.boxes},
                      {"device", o.device}};
#ifdef YOLOFLOW_WITH_CUDA
  c10::cuda::CUDACachingAllocator::emptyCache();  // the previous configuration's cached blocks
#endif
  // The train stage's parameters as the trainer reads them (its schema's defaults filled in),
  // and the parts the trainer trains with, made by the trainer's own builder.
  const auto* train = core::host_registry().find(Kind::Sink, "train");
  if (train == nullptr) throw Error("the train stage is not registered");
  Diagnostics problems;
  train->info.schema.validate(given, "stages.train.params", problems);
  if (!problems.empty()) throw InvalidInput(problems.front().path + ": " + problems.front().message);
  const Params p(train->info.schema.resolve(given), "stages.train.params");
  const torch::Device device(o.device);
  StageContext ctx;
  ctx.node = "train(" + config + ")";
  ctx.imgsz = o.imgsz;
  ctx.epochs = 1;
  ctx.device = device.str();
  ctx.samples_per_epoch = static_cast<std::int64_t>(o.batch) * (o.warmup + o.steps);
  torch::manual_seed(0);
  const core::TrainingPartsBuilder parts(core::host_registry(), p, ctx);
  const std::vector<std::string> names(80, "class");
  auto model = parts.model(names, /*initial_weights=*/true);
  auto precision = parts.precision(device);
  auto scheduler = parts.scheduler();
  core::set_cuda_kernels(device, p.get_bool("cudnn_benchmark"), p.get_bool("tf32"));
  model->module().to(device);
  model->module().train();
  core::OptimizerSchedule schedule(*scheduler,
                                   core::WarmupOptions{p.get_float("warmup_epochs"), p.get_float("warmup_momentum"),
                                                       p.get_float("warmup_bias_lr")},
                                   p.get_int("nominal_batch"), 1, ctx.epochs);
  auto loss = parts.loss(model->head());
  core::BatchTargets targets(parts.target_rows());
  core::TrainState state;
  state.loss_names = loss->loss().item_names();
  // The ema callback, updated after every optimizer step as the trainer calls it.
  const auto* ema_info = core::host_registry().find(Kind::Callback, "ema");
  if (ema_info == nullptr) throw Error("the ema callback is not registered");
  auto ema = core::host_registry().create_as<Callback>(Kind::Callback, "ema", "ema");
  ema->configure(Params(ema_info->info.schema.resolve(json::object()), "ema"), ctx);
  BenchView view(model->module());
  core::StepEngine engine(*model, loss->loss(), *precision, nullptr, nullptr, device, p.get_float("clip_grad"),
                          [&] { ema->on_optimizer_step(view); });
  if (graph) {
    engine.enable_capture_if_possible(false, static_cast<int>(p.get_int("cuda_graph_warmup")), false);
  }
  state.batch = o.batch;
  schedule.set_batch(o.batch, ctx.samples_per_epoch);
  auto optimizer = parts.optimizer();
  schedule.attach(*optimizer, model->module(), model->head().nc, "stages.train.params.optimizer");
  engine.set_optimizer(*optimizer);
  state.loss_sum = torch::zeros({static_cast<std::int64_t>(state.loss_names.size())}, torch::TensorOptions().device(device));

#ifdef YOLOFLOW_WITH_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device.has_index() ? device.index() : 0);
#endif
  std::vector<Batch> batches;
  for (int i = 0; i < 4; ++i) batches.push_back(make_batch(o, 1234 + i));
  // One batch as the trainer's step takes it: the schedule's lr, padded targets, the step.
  auto step = [&](Batch& batch) {
    schedule.apply(state.epoch, state.step);
    auto pixels = torch::from_blob(batch.pixels.get(), {batch.size, batch.height, batch.width, 3}, torch::kUInt8);
    const LossTargets t = targets(batch, engine.captured() != nullptr, state.epoch, state.step);
    engine.train(state, pixels, t, batch.pixels, 0, schedule.accumulate(), loss->key());
    ++state.step;
  };
  for (int i = 0; i < o.warmup; ++i) step(batches[i % batches.size()]);
  sync(device);
  state.loss_sum.zero_();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < o.steps; ++i) step(batches[i % batches.size()]);
  sync(device);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Result r;
  r.ms_per_step = 1e3 * s / o.steps;
  // The timed steps' mean losses: eager and graph train on the same batches from the same
  // initial weights, so they must agree (a replay that trained nothing would not). Read before
  // profiling, whose steps would add to the sums.
  const auto mean = (state.loss_sum / static_cast<double>(o.steps)).to(torch::kCPU);
  for (std::size_t k = 0; k < state.loss_names.size(); ++k) {
    const double v = mean[static_cast<std::int64_t>(k)].item<double>();
    if (state.loss_names[k] == "box") r.box = v;
    if (state.loss_names[k] == "cls") r.cls = v;
    if (state.loss_names[k] == "dfl") r.dfl = v;
    if (state.loss_names[k] == "seg") r.seg = v;
  }
  if (profile) profile_steps(o, [&] { step(batches[0]); });
#ifdef YOLOFLOW_WITH_CUDA
  if (device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.has_index() ? device.index() : 0);
    r.peak_reserved_gib = static_cast<double>(stats.reserved_bytes[0].peak) / (1u << 30);
    r.peak_allocated_gib = static_cast<double>(stats.allocated_bytes[0].peak) / (1u << 30);
  }
#endif
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  yoloflow::core::use_builtin_components();
  Options o;
  CLI::App app{"yoloflow_bench_train_step: the training step alone, as the trainer runs it, eager vs CUDA graph"};
  app.add_option("--data", o.data, "data.yaml (validation split and class names; nothing is validated)")->required();
  app.add_option("--model", o.model, "YOLO11 scale: n, s, m, l, x")->capture_default_str();
  app.add_option("--precision", o.precision, "fp32, amp_fp16, amp_bf16")->capture_default_str();
  app.add_option("--device", o.device, "cuda, cuda:N or cpu")->capture_default_str();
  app.add_option("--configs", o.configs, "comma-separated, the first is the baseline: eager, graph, checkpoint; +kernels after one: the "
                 "segmentation loss's mask term by its CUDA kernels instead of tensor operations")->capture_default_str();
  app.add_option("--batch", o.batch)->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--imgsz", o.imgsz)->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--steps", o.steps, "timed steps")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--warmup", o.warmup, "untimed steps first (the graph's capture among them)")->capture_default_str();
  app.add_option("--boxes", o.boxes, "boxes per image")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--nominal-batch", o.nominal_batch, "0 = the batch: an optimizer step every step")->capture_default_str();
  app.add_option("--task", o.task, "detect, or segment (yolo11<scale>-seg, its loss, each box filled as its mask)")
      ->capture_default_str()
      ->check(CLI::IsMember({"detect", "segment"}));
  app.add_option("--target-rows", o.target_rows, "rows per image the targets are padded to (0 = --boxes); a captured "
                 "training step pads to cuda_graph_rows (96)")->capture_default_str();
  app.add_option("--mask-chunk", o.mask_chunk, "segment: the loss's mask_chunk (0 = its default)")->capture_default_str();
  app.add_option("--profile", o.profile, "after the first configuration, N eager steps under LibTorch's profiler: "
                 "device time per kernel")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    core::PluginManager pm;
    pm.load_all();
    std::printf("train step alone: yolo11%s%s batch %d imgsz %d %s, %d boxes/image padded to %d, nominal batch %d, %d warm-up + %d timed steps on %s\n",
                o.model.c_str(), o.segment() ? "-seg" : "", o.batch, o.imgsz, o.precision.c_str(), o.boxes,
                o.target_rows > 0 ? o.target_rows : o.boxes,
                o.nominal_batch > 0 ? o.nominal_batch : o.batch, o.warmup, o.steps, o.device.c_str());
    std::printf("%-13s %7s %10s %10s %14s %15s\n", "config", "ms/step", "img/s", "vs first", "peak reserved", "peak allocated");
    double base = 0.0;
    std::stringstream names(o.configs);
    for (std::string name; std::getline(names, name, ',');) {
      const std::string base_name = name.size() > 8 && name.compare(name.size() - 8, 8, "+kernels") == 0
                                        ? name.substr(0, name.size() - 8) : name;
      if (base_name != "eager" && base_name != "graph" && base_name != "checkpoint") {
        std::cerr << "unknown config '" << name << "' (eager, graph, checkpoint, each with +kernels)\n";
        return 2;
      }
      const Result r = measure(o, name, base == 0.0 && o.profile > 0);
      if (base == 0.0) base = r.ms_per_step;
      std::printf("%-13s %7.2f %10.1f %9.2fx %10.2f GiB %11.2f GiB   train losses box %.4f cls %.4f dfl %.4f",
                  name.c_str(), r.ms_per_step, 1e3 * o.batch / r.ms_per_step, base / r.ms_per_step, r.peak_reserved_gib,
                  r.peak_allocated_gib, r.box, r.cls, r.dfl);
      if (o.segment()) std::printf(" seg %.4f", r.seg);
      std::printf("\n");
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
