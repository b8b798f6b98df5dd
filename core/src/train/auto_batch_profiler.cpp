#include "train/auto_batch_profiler.h"

#include <algorithm>
#include <cmath>

#include <torch/cuda.h>
#include <torch/torch.h>

#include "dist/runtime.h"
#include "pipeline/component_factory.h"
#include "pipeline/pipeline.h"
#include "train/cuda_memory.h"
#include "train/detection_loss.h"
#include "train/oom_guard.h"
#include "yoloflow/error.h"
#include "yoloflow/log.h"
#include "yoloflow/model.h"
#include "yoloflow/precision.h"
#include "yoloflow/source.h"

namespace yoloflow::core {
namespace {

constexpr std::int64_t kCpuBatch = 16;       // Ultralytics' default when it cannot profile
constexpr std::int64_t kMaxAutoBatch = 1024;
const std::vector<std::int64_t> kProfiledBatches = {1, 2, 4, 8, 16};

// The train sink's device choice (train_sink.cpp pick_device): its own "device" parameter,
// else the run's (--device, else the pipeline's); "auto" = CUDA when available.
torch::Device train_device(const json& sink_params, const std::string& run_device) {
  std::string wanted = sink_params.value("device", std::string());
  if (wanted.empty()) wanted = run_device;
  if (wanted.empty() || wanted == "auto") {
    return torch::cuda::is_available() ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);
  }
  torch::Device d(wanted);
  return d.is_cuda() && !torch::cuda::is_available() ? torch::Device(torch::kCPU) : d;
}

// Rows per image the sink pads the densest image's targets to (train_sink.cpp consume, pad_targets).
std::int64_t padded_rows(const json& sink, std::size_t densest) {
  const std::int64_t fixed = sink.value("target_rows", std::int64_t{0});
  if (fixed > 0) return fixed;
  const std::int64_t multiple = std::max<std::int64_t>(sink.value("target_rows_multiple", std::int64_t{32}), 1);
  std::int64_t rows = (std::max<std::int64_t>(static_cast<std::int64_t>(densest), 1) + multiple - 1) / multiple * multiple;
  if (sink.value("cuda_graph", false)) rows = std::max(rows, sink.value("cuda_graph_rows", std::int64_t{96}));
  return rows;
}

// `rows` random boxes of random classes per image, padded (batch, rows, 5) as the loss takes them.
torch::Tensor random_targets(std::int64_t batch, std::int64_t rows, int nc, const torch::Device& device) {
  const auto n = batch * rows;
  auto index = torch::arange(batch, torch::kFloat).repeat_interleave(rows).unsqueeze(1);
  auto cls = torch::randint(0, std::max(nc, 1), {n, 1}, torch::kFloat);
  auto centre = torch::rand({n, 2}) * 0.8 + 0.1;
  auto size = torch::rand({n, 2}) * 0.28 + 0.02;
  return pad_targets(torch::cat({index, cls, centre, size}, 1), batch, rows).to(device);
}

void set_batch(Pipeline& pipeline, const std::string& batcher, std::int64_t batch) {
  for (auto& stage : pipeline.stages) {
    if (stage.name == batcher) stage.params["batch"] = batch;
  }
  pipeline.document["stages"][batcher]["params"]["batch"] = batch;
}

}  // namespace

StepMemoryProfile profile_step_memory(Model& model, PrecisionStrategy& precision, DetectionLoss& loss,
                                      const c10::Device& device, int imgsz, std::int64_t rows,
                                      const std::vector<std::int64_t>& batches, const std::function<void()>& restart,
                                      const std::function<double()>& measure) {
  StepMemoryProfile out;
  const int nc = model.head().nc;
  for (const std::int64_t batch : batches) {
    restart();
    try {
      {
        // As the sink's step: NHWC uint8 on the device, converted to float inside the step.
        auto pixels = torch::randint(0, 256, {batch, imgsz, imgsz, 3}, torch::TensorOptions().dtype(torch::kUInt8)).to(device);
        auto targets = random_targets(batch, rows, nc, device);
        torch::Tensor objective;
        {
          auto images = pixels.permute({0, 3, 1, 2}).to(torch::kFloat).div_(255.0);
          auto scope = precision.autocast(device);
          objective = loss(model.forward_train(images), targets).total;
        }
        precision.scale_loss(objective).backward();
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
  if (sink_stage.plugin != "train") {
    YF_LOG_WARN(path << ": batch " << asked << " is profiled for the train sink only; using " << kCpuBatch);
    set_batch(pipeline, batcher, kCpuBatch);
    return;
  }
  if (dist::current_env().distributed()) {
    // Each rank would profile its own device and might choose another batch than the others.
    throw InvalidInput(path + ": batch " + asked + " is not supported in data-parallel training; profile it in a "
                       "one-GPU run (its pipeline.json records the choice) and set that number");
  }
  const json sink = pipeline.stage_params(pipeline.sink, 0);
  const torch::Device device = train_device(sink, device_override.empty() ? pipeline.device : device_override);
  if (!device.is_cuda()) {
    YF_LOG_WARN(path << ": batch " << asked << " needs a CUDA device; using " << kCpuBatch);
    set_batch(pipeline, batcher, kCpuBatch);
    return;
  }
  const std::string sink_path = sink_stage.path() + ".params";
  // As the sink does first: the allocator reads its configuration when CUDA initialises, and
  // the cap makes an allocation beyond it fail here as it would in training.
  apply_cuda_alloc_conf(sink.value("cuda_alloc_conf", std::string()), sink_path + ".cuda_alloc_conf");
  const double cap = sink.value("cuda_memory_fraction", 0.0);
  set_cuda_memory_fraction(device, cap);
  at::globalContext().setBenchmarkCuDNN(sink.value("cudnn_benchmark", true) || sink.value("cuda_graph", false));
  at::globalContext().setAllowTF32CuDNN(sink.value("tf32", true));

  StageContext ctx;
  ctx.node = sink_path;
  ctx.imgsz = pipeline.imgsz(0);
  ctx.epochs = pipeline.epochs;
  ctx.seed = pipeline.seed;
  ctx.device = device.str();
  // The training source: its class names (the head's size) and densest image (the padded rows).
  const StageSpec& source_stage = pipeline.stage(pipeline.source);
  StageContext source_ctx = ctx;
  source_ctx.node = source_stage.name;
  auto source = create_component<DataSource>(registry, Kind::Source,
                                             json{{"plugin", source_stage.plugin}, {"params", pipeline.stage_params(source_stage.name, 0)}},
                                             source_stage.path(), source_ctx);
  const DatasetInfo info = source->info();
  const auto samples = static_cast<std::int64_t>(source->size());
  source.reset();

  json model_spec = sink.at("model");
  if (!model_spec.contains("params") || !model_spec["params"].is_object()) model_spec["params"] = json::object();
  if (!model_spec["params"].contains("nc") ||
      (model_spec["params"]["nc"].is_number_integer() && model_spec["params"]["nc"].get<int>() == 0)) {
    model_spec["params"]["nc"] = static_cast<int>(info.names.size());
  }
  torch::manual_seed(pipeline.seed);
  auto model = create_component<Model>(registry, Kind::Model, model_spec, sink_path + ".model", ctx);
  auto precision = create_component<PrecisionStrategy>(registry, Kind::Precision, sink.at("precision"),
                                                       sink_path + ".precision", ctx);
  std::string why;
  if (!precision->supports(device, why)) throw InvalidInput(sink_path + ".precision: " + why);
  model->module().to(device);
  model->module().train();
  DetectionLoss loss(model->head(), LossGains{sink.value("box", 7.5), sink.value("cls", 0.5), sink.value("dfl", 1.5)});
  const std::int64_t rows = padded_rows(sink, info.max_boxes);
  if (sink.value("micro_batch", std::int64_t{0}) > 0) {
    YF_LOG_WARN(path << ": auto batch profiles whole-batch steps; micro_batch " << sink.value("micro_batch", std::int64_t{0})
                     << " then only lowers the peak below the prediction");
  }

  const auto profile = profile_step_memory(
      *model, *precision, loss, device, ctx.imgsz, rows, kProfiledBatches, [&] { restart_cuda_peak(device); },
      [&] { return cuda_peak_reserved_bytes(device).value_or(0.0); });
  // State the profiled step does not hold: the optimizer's moments (two per parameter for
  // Adam-type optimizers, one for SGD: the larger) and the EMA copy of parameters and buffers.
  double parameter_bytes = 0, buffer_bytes = 0;
  for (const auto& p : model->module().parameters()) parameter_bytes += static_cast<double>(p.numel() * p.element_size());
  for (const auto& b : model->module().buffers()) buffer_bytes += static_cast<double>(b.numel() * b.element_size());
  const double persistent = 2.0 * parameter_bytes + (sink.value("ema", true) ? parameter_bytes + buffer_bytes : 0.0);
  model.reset();
  precision.reset();
  restart_cuda_peak(device);

  const double capacity = cuda_memory_capacity_bytes(device, cap).value_or(0.0);
  const auto choice = choose_auto_batch(profile.points, fraction * capacity, persistent,
                                        std::min<std::int64_t>(kMaxAutoBatch, std::max<std::int64_t>(samples, 1)),
                                        profile.oom_batch);
  YF_LOG_INFO(describe_auto_batch(profile.points, profile.oom_batch, choice, fraction, capacity) << " [" << rows
                                  << " target rows per image, imgsz " << ctx.imgsz << ", " << device.str() << "]");
  if (!choice.warning.empty()) YF_LOG_WARN("auto batch: " << choice.warning);
  set_batch(pipeline, batcher, choice.batch);
}

}  // namespace yoloflow::core
