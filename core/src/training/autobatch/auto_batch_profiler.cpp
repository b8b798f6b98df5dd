#include "training/autobatch/auto_batch_profiler.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <string>

#include <torch/cuda.h>
#include <torch/torch.h>

#include <tbb/parallel_for.h>

#include "runtime/dist/runtime.h"
#include "runtime/graph/augmented_samples.h"
#include "runtime/pipeline/component_factory.h"
#include "runtime/pipeline/pipeline.h"
#include "training/components/batch_targets.h"
#include "training/device/cuda_memory.h"
#include "training/device/train_device.h"
#include "training/step/multi_scale.h"
#include "training/device/oom_guard.h"
#include "training/step/step_engine.h"
#include "training/step/train_device_setup.h"
#include "training/step/training_parts.h"
#include "yoloflow/error.h"
#include "yoloflow/log.h"
#include "yoloflow/loss.h"
#include "yoloflow/model.h"
#include "yoloflow/precision.h"
#include "yoloflow/source.h"

namespace yoloflow::core {
namespace {

constexpr std::int64_t kCpuBatch = 16;       // Ultralytics' default when it cannot profile
constexpr std::int64_t kMaxAutoBatch = 1024;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
const std::vector<std::int64_t> kProfiledBatches = {1, 2, 4, 8, 16};

constexpr std::size_t kSampledImages = 512;  // augmented samples whose boxes set the profiled rows

// `rows` random boxes of random classes per image, padded (batch, rows, 5) as the loss takes
// them, and the batcher's mask targets (random instance planes) when it makes them. A loss that
// needs other targets (keypoints) cannot be profiled this way and says which targets it missed.
LossTargets random_targets(std::int64_t batch, std::int64_t rows, int nc, int imgsz, const ProfiledMasks& masks,
                           const torch::Device& device) {
  const auto n = batch * rows;
  auto index = torch::arange(batch, torch::kFloat).repeat_interleave(rows).unsqueeze(1);
  auto cls = torch::randint(0, std::max(nc, 1), {n, 1}, torch::kFloat);
  auto centre = torch::rand({n, 2}) * 0.8 + 0.1;
  auto size = torch::rand({n, 2}) * 0.28 + 0.02;
  LossTargets out;
  out.tensors[targets::kBoxes] = pad_targets(torch::cat({index, cls, centre, size}, 1), batch, rows).to(device);
  if (masks.ratio > 0) {
    const std::int64_t side = std::max<std::int64_t>(imgsz / masks.ratio, 1);
    // As the batcher writes them: per image the value k + 1 of its instance k on top (0: none),
    // or per instance 0/1.
    out.tensors["image_masks"] = torch::randint(0, rows + 1, {batch, side, side}, torch::kFloat).to(device);
    if (!masks.overlap) {
      out.tensors.erase("image_masks");
      out.tensors["masks"] = torch::randint(0, 2, {batch, rows, side, side}, torch::kFloat).to(device);
    }
  }
  return out;
}

// A stage parameter set in the stage and in the resolved document (the run's pipeline.json).
void set_param(Pipeline& pipeline, const std::string& stage_name, const std::string& key, const json& value) {
  for (auto& stage : pipeline.stages) {
    if (stage.name == stage_name) stage.params[key] = value;
  }
  pipeline.document["stages"][stage_name]["params"][key] = value;
}

void set_batch(Pipeline& pipeline, const std::string& batcher, std::int64_t batch) {
  set_param(pipeline, batcher, "batch", batch);
}

}  // namespace

// The sink pads every image of a batch to its fullest one, the assigner's (batch x rows x
// anchors) tensors grow with that, and a mosaic holds up to four images' boxes: on the H200,
// coco128 x20 at 640, 81 boxes against 42 in the densest image on disk. (A large miss of
// the batch it chose was mostly the fit and fragmentation, though: see resolve_auto_batch.)
AugmentedBoxes densest_augmented_boxes(const Pipeline& pipeline, const Registry& registry, std::size_t max_samples) {
  // The first epoch's samples once: a RAM cache would decode the whole dataset for them.
  json overrides = json::object();
  if (pipeline.stage_params(pipeline.source, 0).contains("cache")) overrides["cache"] = "none";
  AugmentedSamples samples(pipeline, registry, 0, overrides);
  AugmentedBoxes out;
  out.info = samples.source().info();
  out.samples = samples.size();
  const std::size_t n = std::min(samples.size(), max_samples);
  std::vector<std::size_t> boxes(n, 0);
  tbb::parallel_for(std::size_t{0}, n, [&](std::size_t i) {
    try {
      boxes[i] = samples.at(i).boxes.size();
    } catch (const std::exception&) {
      boxes[i] = 0;
    }
  });
  out.sampled = n;
  out.densest = n == 0 ? 0 : *std::max_element(boxes.begin(), boxes.end());
  return out;
}

ProfiledMasks profiled_masks(const json& params) {
  ProfiledMasks out;
  if (!params.is_object() || !params.value("masks", false)) return out;
  const json ratio = params.value("mask_ratio", json(4));
  out.ratio = ratio.is_number_integer() ? std::max(ratio.get<int>(), 1) : 4;
  out.overlap = params.value("overlap_mask", true);
  return out;
}

StepMemoryProfile profile_step_memory(Model& model, PrecisionStrategy& precision, Loss& loss,
                                      const c10::Device& device, int imgsz, std::int64_t rows,
                                      const std::vector<std::int64_t>& batches, const std::function<void()>& restart,
                                      const std::function<double()>& measure, const ProfiledMasks& masks) {
  StepMemoryProfile out;
  const int nc = model.head().nc;
  // The training step itself, without its optimizer: the memory measured is the one it takes.
  StepEngine step(model, loss, precision, /*dp=*/nullptr, /*profile=*/nullptr, device, /*clip_grad=*/0.0, nullptr);
  for (const std::int64_t batch : batches) {
    restart();
    try {
      {
        // As the sink's step: NHWC uint8 on the device, converted to float inside the step.
        auto pixels = torch::randint(0, 256, {batch, imgsz, imgsz, 3}, torch::TensorOptions().dtype(torch::kUInt8)).to(device);
        step.forward_backward_only(pixels, random_targets(batch, rows, nc, imgsz, masks, device));
      }
      if (device.is_cuda()) torch::cuda::synchronize(device.index());
      out.points.push_back({batch, measure()});
    } catch (const std::exception& e) {
      for (auto& p : model.module().parameters()) p.mutable_grad() = torch::Tensor();
      if (!is_out_of_memory(e)) throw;
      out.oom_batch = batch;
      YF_LOG_INFO("auto batch: batch " << batch << " ran out of memory while profiling (" << short_message(e) << ")");
      break;
    }
    for (auto& p : model.module().parameters()) p.mutable_grad() = torch::Tensor();
  }
  restart();
  return out;
}

void resolve_auto_batch(Pipeline& pipeline, const Registry& registry, const std::string& device_override) {
  const std::string& batcher = pipeline.batcher;
  if (batcher.empty()) return;
  const json& value = pipeline.stage(batcher).params.value("batch", json());
  const double fraction = auto_batch_fraction(value);
  if (fraction <= 0.0) return;
  const std::string path = "stages." + batcher + ".params.batch";
  const std::string asked = value.is_string() ? "\"" + value.get<std::string>() + "\"" : value.dump();
  const StageSpec& sink_stage = pipeline.stage(pipeline.sink);
  if (sink_stage.component->driver == nullptr) {
    YF_LOG_WARN(path << ": batch " << asked << " is profiled for the train stage only; using " << kCpuBatch);
    set_batch(pipeline, batcher, kCpuBatch);
    return;
  }
  if (dist::current_env().distributed()) {
    // Each rank would profile its own device and might choose another batch than the others.
    throw InvalidInput(path + ": batch " + asked + " is not supported in data-parallel training; profile it in a "
                       "one-GPU run (its pipeline.json records the choice) and set that number");
  }
  // The train stage's parameters as the trainer reads them: its defaults are the schema's.
  const std::string sink_path = sink_stage.path() + ".params";
  const Params sink(pipeline.stage_params(pipeline.sink, 0), sink_path);
  const torch::Device device = train_device_of(sink, device_override.empty() ? pipeline.device : device_override);
  if (!device.is_cuda()) {
    YF_LOG_WARN(path << ": batch " << asked << " needs a CUDA device; using " << kCpuBatch);
    set_batch(pipeline, batcher, kCpuBatch);
    return;
  }
  // The training data first, before anything touches the GPU: a dataset that cannot be read
  // stops the run here, not after minutes of profiling. Its class names (the head's size),
  // size, and the densest augmented image.
  const AugmentedBoxes drawn = densest_augmented_boxes(pipeline, registry, kSampledImages);
  const DatasetInfo& info = drawn.info;
  const auto samples = static_cast<std::int64_t>(drawn.samples);
  // As the sink does first: the allocator reads its configuration when CUDA initialises, and
  // the cap makes an allocation beyond it fail here as it would in training.
  // A batch's target rows follow its densest image, so the loss's tensors change size from step
  // to step, and the caching allocator's fixed segments fragment: H200, yolo11n, batch 175:
  // 63.2 GiB reserved for 46.8 GiB allocated; with expandable segments 48.0 for 47.6.
  // Unless the pipeline or the environment configures the allocator, auto batch turns them on
  // (recorded in pipeline.json, so a resumed run keeps them).
  std::string alloc_conf = sink.get_string("cuda_alloc_conf");
  if ((alloc_conf.empty() || alloc_conf == "auto") && std::getenv("PYTORCH_CUDA_ALLOC_CONF") == nullptr &&
      !expandable_segments_conf().empty()) {
    alloc_conf = expandable_segments_conf();
    set_param(pipeline, pipeline.sink, "cuda_alloc_conf", alloc_conf);
    YF_LOG_INFO("auto batch: " << sink_path << ".cuda_alloc_conf = \"" << alloc_conf
                               << "\" (varying target rows fragment fixed segments; \"expandable_segments:False\" keeps them)");
  }
  set_up_train_device(device, sink, alloc_conf);
  const double cap = sink.get_float("cuda_memory_fraction");
  const bool captured = capture_requested(sink.get_json("cuda_graph"), device);
  // cuDNN's heuristics, whatever the run's cudnn_benchmark: every profiled batch is a new input
  // shape, and a benchmark searches each one again (yolo11x at 1280 on the H200: 104 s for the
  // five profiled batches and 26-28 s for each check; with the heuristics 21.5 s from the process start to
  // a built run, profile and check included).
  set_cuda_kernels(device, /*cudnn_benchmark=*/false, sink.get_bool("tf32"));

  StageContext ctx;
  ctx.node = sink_path;
  ctx.imgsz = pipeline.imgsz(0);
  ctx.epochs = pipeline.epochs;
  ctx.seed = pipeline.seed;
  ctx.device = device.str();

  // The parts the trainer will train, made by the same builder.
  torch::manual_seed(pipeline.seed);
  const TrainingPartsBuilder parts(registry, sink, ctx);
  auto model = parts.model(info.names, /*initial_weights=*/sink.get_string("resume").empty());
  const FrozenLayers frozen = parts.freeze(*model);
  auto precision = parts.precision(device);
  model->module().to(device);
  frozen.train(model->module());
  auto scheduled_loss = parts.loss(model->head());
  Loss& loss = scheduled_loss->loss();
  // The rows the trainer pads to (BatchTargets): with cuda_graph, a batch that fits the
  // captured cuda_graph_rows gets exactly those.
  const TargetRows target_rows = parts.target_rows();
  const std::int64_t rows = padded_target_rows(static_cast<std::int64_t>(drawn.densest), target_rows.fixed,
                                               target_rows.multiple, captured ? target_rows.fit : 0);
  if (sink.get_int("micro_batch") > 0) {
    YF_LOG_WARN(path << ": auto batch profiles whole-batch steps; micro_batch " << sink.get_int("micro_batch")
                     << " then only lowers the peak below the prediction");
  }

  auto restart = [&] { restart_cuda_peak(device); };
  auto measure = [&] { return cuda_peak_reserved_bytes(device).value_or(0.0); };
  // Multi-scale batches reach (1 + multi_scale) x imgsz: the largest is what must fit.
  const int imgsz = largest_multi_scale_size(ctx.imgsz, sink.get_float("multi_scale"),
                                             static_cast<int>(largest_stride(model->head())));
  const ProfiledMasks masks = profiled_masks(pipeline.stage_params(batcher, 0));
  const auto profile =
      profile_step_memory(*model, *precision, loss, device, imgsz, rows, kProfiledBatches, restart, measure, masks);
  // State the profiled step does not hold: the optimizer's moments (two per trained parameter
  // for Adam-type optimizers, one for SGD: the larger; frozen layers have none) and the EMA copy
  // of parameters and buffers.
  double parameter_bytes = 0, trained_bytes = 0, buffer_bytes = 0;
  for (const auto& p : model->module().parameters()) {
    const auto bytes = static_cast<double>(p.numel() * p.element_size());
    parameter_bytes += bytes;
    if (p.requires_grad()) trained_bytes += bytes;
  }
  for (const auto& b : model->module().buffers()) buffer_bytes += static_cast<double>(b.numel() * b.element_size());
  // `ema` true keeps an average (a listed `ema` callback with `ema` false is refused).
  const double persistent = 2.0 * trained_bytes + (sink.get_bool("ema") ? parameter_bytes + buffer_bytes : 0.0);

  const double capacity = cuda_memory_capacity_bytes(device, cap).value_or(0.0);
  const double target = fraction * capacity;
  const std::int64_t max_batch = std::min<std::int64_t>(kMaxAutoBatch, std::max<std::int64_t>(samples, 1));
  const auto choice = choose_auto_batch(profile.points, target, persistent, max_batch, profile.oom_batch);
  YF_LOG_INFO(describe_auto_batch(profile.points, profile.oom_batch, choice, fraction, capacity) << " [" << rows
                                  << " target rows per image: the densest of " << drawn.sampled
                                  << " augmented samples of epoch 1 has " << drawn.densest << " boxes; imgsz " << imgsz << ", " << device.str() << "]");
  if (!choice.warning.empty()) YF_LOG_WARN("auto batch: " << choice.warning);

  // The fit extrapolates from batches of at most 16, and the step's peak grows faster than that
  // at large batches (H200, yolo11n fp32: 34.8 GiB predicted for batch 175, 46.8 GiB allocated
  // in training). A real step at the chosen batch checks it; the line through that step and the
  // largest profiled batch corrects it, up to three times.
  std::int64_t batch = choice.batch;
  const BatchMemory anchor = profile.points.back();
  for (int check = 0; check < 3 && batch > anchor.batch; ++check) {
    const auto checked = profile_step_memory(*model, *precision, loss, device, imgsz, rows, {batch}, restart, measure, masks);
    if (checked.points.empty()) {  // out of memory (logged): halfway back to what was measured
      batch = anchor.batch + (batch - anchor.batch) / 2;
      continue;
    }
    const std::int64_t next = refine_auto_batch(anchor, checked.points.front(), target, persistent, max_batch);
    YF_LOG_INFO("auto batch: a step at batch " << batch << " peaked at " << std::fixed << std::setprecision(2)
                                               << (checked.points.front().bytes + persistent) / kGiB << " GiB with optimizer/EMA state"
                                               << " (target " << target / kGiB << " GiB) -> "
                                               << (next == batch ? "batch " + std::to_string(batch) + " kept"
                                                                 : "batch " + std::to_string(next)));
    if (next == batch) break;
    batch = next;
  }
  scheduled_loss.reset();
  model.reset();
  precision.reset();
  restart_cuda_peak(device);
  set_batch(pipeline, batcher, batch);
}

}  // namespace yoloflow::core
