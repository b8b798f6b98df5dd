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
//       [--nominal-batch B] [--configs eager,graph,checkpoint]
// `checkpoint` is the eager step with activation checkpointing of backbone and neck (the
// model's checkpoint_backbone/checkpoint_neck): its peak memory against eager's is the saving.
#include <chrono>
#include <cstdio>
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
#include "training/trainer/step_engine.h"
#include "training/trainer/train_state.h"
#include "training/trainer/training_parts.h"
#include "yoloflow/callback.h"
#include "yoloflow/error.h"
#include "yoloflow/training_view.h"

#ifdef YOLOFLOW_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace {

using namespace yoloflow;

struct Options {
  std::string data, model = "n", precision = "amp_fp16", device = "cuda", configs = "eager,graph";
  int batch = 32, imgsz = 640, steps = 60, warmup = 10, boxes = 8, nominal_batch = 0;
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
  return b;
}

void sync(const torch::Device& d) {
  if (d.is_cuda()) torch::cuda::synchronize(d.index());
}

struct Result {
  double ms_per_step = 0.0, peak_reserved_gib = 0.0, peak_allocated_gib = 0.0;
  double box = 0.0, cls = 0.0, dfl = 0.0;  // mean training losses over the epoch
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

Result measure(const Options& o, const std::string& config) {
  const bool graph = config == "graph", checkpoint = config == "checkpoint";
  const json given = {{"data", o.data},
                      {"model",
                       {{"plugin", "yolo11"},
                        {"params", {{"scale", o.model}, {"checkpoint_backbone", checkpoint}, {"checkpoint_neck", checkpoint}}}}},
                      {"precision", {{"plugin", o.precision}}},
                      {"optimizer", {{"plugin", "sgd"}}},
                      {"scheduler", {{"plugin", "linear"}}},
                      {"nominal_batch", o.nominal_batch > 0 ? o.nominal_batch : o.batch},
                      {"cudnn_benchmark", true},
                      {"cuda_graph", graph},
                      {"target_rows", o.boxes},
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
#ifdef YOLOFLOW_WITH_CUDA
  if (device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.has_index() ? device.index() : 0);
    r.peak_reserved_gib = static_cast<double>(stats.reserved_bytes[0].peak) / (1u << 30);
    r.peak_allocated_gib = static_cast<double>(stats.allocated_bytes[0].peak) / (1u << 30);
  }
#endif
  // The timed steps' mean losses: eager and graph train on the same batches from the same
  // initial weights, so they must agree (a replay that trained nothing would not).
  const auto mean = (state.loss_sum / static_cast<double>(o.steps)).to(torch::kCPU);
  for (std::size_t k = 0; k < state.loss_names.size(); ++k) {
    const double v = mean[static_cast<std::int64_t>(k)].item<double>();
    if (state.loss_names[k] == "box") r.box = v;
    if (state.loss_names[k] == "cls") r.cls = v;
    if (state.loss_names[k] == "dfl") r.dfl = v;
  }
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
  app.add_option("--configs", o.configs, "comma-separated, the first is the baseline: eager, graph, checkpoint")->capture_default_str();
  app.add_option("--batch", o.batch)->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--imgsz", o.imgsz)->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--steps", o.steps, "timed steps")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--warmup", o.warmup, "untimed steps first (the graph's capture among them)")->capture_default_str();
  app.add_option("--boxes", o.boxes, "boxes per image")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--nominal-batch", o.nominal_batch, "0 = the batch: an optimizer step every step")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    core::PluginManager pm;
    pm.load_all();
    std::printf("train step alone: yolo11%s batch %d imgsz %d %s, %d boxes/image, nominal batch %d, %d warm-up + %d timed steps on %s\n",
                o.model.c_str(), o.batch, o.imgsz, o.precision.c_str(), o.boxes,
                o.nominal_batch > 0 ? o.nominal_batch : o.batch, o.warmup, o.steps, o.device.c_str());
    std::printf("%-10s %10s %10s %10s %14s %15s\n", "config", "ms/step", "img/s", "vs first", "peak reserved", "peak allocated");
    double base = 0.0;
    std::stringstream names(o.configs);
    for (std::string name; std::getline(names, name, ',');) {
      if (name != "eager" && name != "graph" && name != "checkpoint") {
        std::cerr << "unknown config '" << name << "' (eager, graph, checkpoint)\n";
        return 2;
      }
      const Result r = measure(o, name);
      if (base == 0.0) base = r.ms_per_step;
      std::printf("%-10s %10.2f %10.1f %9.2fx %10.2f GiB %11.2f GiB   train losses box %.4f cls %.4f dfl %.4f\n",
                  name.c_str(), r.ms_per_step, 1e3 * o.batch / r.ms_per_step, base / r.ms_per_step, r.peak_reserved_gib,
                  r.peak_allocated_gib, r.box, r.cls, r.dfl);
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
