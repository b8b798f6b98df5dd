#include "training/step/step_engine.h"

#include <cmath>
#include <string>
#include <vector>

#include "training/parallel/data_parallel.h"
#include "runtime/dist/runtime.h"
#include "training/components/batch_targets.h"
#include "training/device/cuda_memory.h"
#include "training/step/micro_batches.h"
#include "training/device/oom_guard.h"
#include "yoloflow/error.h"
#include "yoloflow/log.h"
#include "yoloflow/torch_compat.h"

namespace yoloflow::core {
namespace {

// Clips the global gradient norm without reading it on the host.
void clip_gradients(std::vector<torch::Tensor>& grads, double max_norm) {
  if (grads.empty()) return;
  // Multi-tensor kernels: one launch per op for all gradients, not ~250 (yolo11n).
  const auto total = torch::stack(at::_foreach_norm(grads)).norm();
  compat::foreach_mul_(grads, (max_norm / (total + 1e-6)).clamp_max(1.0));
}

}  // namespace

std::string capture_unavailable_reason(const torch::Device& device, bool data_parallel, bool profiling) {
  std::string why = CapturedStep::unavailable_reason(device);
  if (why.empty() && data_parallel) why = "not with data parallel (the gradient hooks run per step)";
  if (why.empty() && profiling) why = "not with profile_every (it times phases inside the step)";
  return why;
}

bool capture_requested(const nlohmann::json& setting, const torch::Device& device) {
  if (setting.is_boolean()) return setting.get<bool>();
  return setting.is_string() && setting.get<std::string>() == "auto" && device.is_cuda();
}

void StepEngine::enable_capture_if_possible(bool profiling, int warmup_steps, bool automatic) {
  const std::string why = capture_unavailable_reason(device_, dp_ != nullptr, profiling);
  if (!why.empty()) {
    if (automatic) {
      YF_LOG_INFO("train: cuda_graph auto: eager steps, " << why);
    } else {
      YF_LOG_WARN("train: cuda_graph off: " << why);
    }
    return;
  }
  // cuDNN's algorithms, benchmarked or picked by its heuristics, are chosen during the eager
  // warm-up steps, on the thread that later captures (LibTorch keeps them per thread): the
  // capture then only replays choices already made. The heuristics' picks capture and replay as
  // fast as benchmarked ones (yolo11n b32 at 640 on the H200: 22.5 ms a step either way), and
  // the benchmark's search is what made the first step wait (22.3 s against 5.8 s after the
  // process started; docs/performance.md, "cudnn_benchmark", has the command).
  // One graph: on the H200 a second capture into the first one's memory pool failed
  // (CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED), so other target shapes run eagerly.
  enable_capture(std::make_unique<CapturedStep>(device_, warmup_steps, 1));
}

void StepEngine::between_steps(const std::function<void()>& work) {
  if (captured_ && !captured_->failed()) {
    captured_->run_between_replays(work);
  } else {
    work();
  }
}

void StepEngine::log_capture_counts() const {
  if (!captured_ || captured_->failed()) return;
  YF_LOG_INFO("train: cuda_graph: " << captured_->graphs() << " graph(s) captured; so far " << captured_->replays()
                                    << " steps replayed, " << captured_->eager_steps()
                                    << " eager (warm-up, or more target rows than cuda_graph_rows)");
}

StepEngine::StepEngine(Model& model, Loss& loss, PrecisionStrategy& precision, dist::DataParallel* dp,
                       StepProfile* profile, torch::Device device, double clip_grad, std::function<void()> after_step)
    : model_(model),
      loss_(loss),
      precision_(&precision),
      dp_(dp),
      profile_(profile),
      device_(device),
      clip_grad_(clip_grad),
      after_step_(std::move(after_step)) {}

StepEngine::~StepEngine() = default;

void StepEngine::train(TrainState& state, const torch::Tensor& pixels, const LossTargets& targets,
                       std::shared_ptr<std::uint8_t> owner, int size, std::int64_t accumulate, const std::string& key) {
  if (captured_ && size > 0 && !multi_scale_reported_) {
    multi_scale_reported_ = true;
    YF_LOG_WARN("train: multi_scale changes the image size every batch; cuda_graph is not used, steps run eagerly");
  }
  if (captured_ && !captured_->failed() && state.micro_batch == 0 && size == 0) {
    captured_->run(
        pixels, targets, key,
        [&](const torch::Tensor& px, const LossTargets& tg) {
          state.loss_sum += forward_backward(state, px, tg, 0, accumulate);
        },
        [this] { allocate_missing_grads(); }, owner);
    if (captured_->failed() && !failure_reported_) {
      failure_reported_ = true;
      YF_LOG_WARN("train: cuda_graph capture failed, training on with eager steps: " << captured_->failure());
    }
  } else {
    const auto device_targets = targets_to(targets, device_);
    // Out of memory: drop the window's gradients, halve the micro-batch, run the batch again
    // (oom_guard.h says why the window goes and where this stops).
    for (;;) {
      try {
        state.loss_sum += forward_backward(state, pixels, device_targets, size, accumulate);
        break;
      } catch (const std::exception& e) {
        if (!is_out_of_memory(e)) throw;
        recover_from_out_of_memory(state, e, pixels.size(0));
      }
    }
  }
  ++state.micro;
  if (state.micro >= accumulate) optimizer_step(state);
}

void StepEngine::forward_backward_only(const torch::Tensor& pixels, const LossTargets& targets) {
  TrainState state;
  state.loss_sum = torch::zeros({static_cast<std::int64_t>(loss_.item_names().size())}, torch::TensorOptions().device(device_));
  (void)forward_backward(state, pixels, targets, 0, 1);
}

// With several chunks in a one-process run the gradient is the whole batch's loss normaliser
// exactly (micro_batches.h): each chunk backpropagates its unnormalised loss over a
// provisional normaliser K (the first chunk's target-score sum scaled to the batch, for a
// well-scaled backward), and once every chunk's score sum is known the batch's gradient is
// rescaled by K / max(score sum, 1). The window's earlier gradients are set aside meanwhile
// (a second gradient-sized buffer while accumulating). Data parallel: the reducer sends each
// chunk's gradients during its backward, before the sum is known, so there each chunk keeps
// its own normaliser with the floor scaled to its share.
torch::Tensor StepEngine::forward_backward(TrainState& state, const torch::Tensor& pixels, const LossTargets& targets,
                                           int size, std::int64_t accumulate) {
  const std::int64_t batch = pixels.size(0);
  const auto chunks = micro_batches(batch, state.micro_batch);
  const bool exact = chunks.size() > 1 && !dp_;
  // NHWC uint8 on the device (a quarter of the float images); each chunk converts its own
  // images, so the float copy of only one chunk exists at a time.
  const auto device_pixels = pixels.to(device_);
  if (profile_) profile_->end_phase(StepProfile::kHostToDevice);
  std::vector<torch::Tensor> params, held;
  if (exact) {
    for (auto& p : model_.module().parameters()) {
      params.push_back(p);
      held.push_back(p.grad());
      p.mutable_grad() = torch::Tensor();
    }
  }
  const auto on_device = torch::TensorOptions().device(device_);
  const auto k = static_cast<std::int64_t>(state.loss_sum.numel());  // the loss's logged components
  torch::Tensor sums = torch::zeros({k}, on_device);  // unnormalised losses
  torch::Tensor items = torch::zeros({k}, on_device);
  torch::Tensor score_sum = torch::zeros({}, on_device);
  torch::Tensor provisional;  // K
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    const auto& chunk = chunks[c];
    const double share = static_cast<double>(chunk.size) / static_cast<double>(batch);
    LossOutput loss;
    {
      // NHWC memory seen as NCHW: a channels-last tensor.
      auto images = device_pixels.narrow(0, chunk.start, chunk.size).permute({0, 3, 1, 2}).to(torch::kFloat).div_(255.0);
      if (size > 0) images = resize_for_multi_scale(images, size);
      auto scope = precision_->autocast(device_);
      const ModelOutput output = model_.forward_train(images);
      loss = loss_.compute(output, narrow_targets(targets, chunk.start, chunk.size), share);
    }
    // A shape, known on the host: no synchronisation.
    if (loss.items.numel() != k) {
      throw Error("the loss returned " + std::to_string(loss.items.numel()) + " items, but its item_names() lists " +
                  std::to_string(k));
    }
    // A loss without a normaliser is a mean over its images: chunks weigh by their share.
    if (exact && !loss.normaliser.defined()) loss.normaliser = torch::full({}, share, on_device);
    if (profile_) profile_->end_phase(StepProfile::kForward);
    torch::Tensor objective = loss.total;
    if (exact) {
      // total = images(chunk) * sums(chunk) / max(score sum(chunk), share)
      const auto used = loss.normaliser.clamp_min(share);
      if (c == 0) provisional = (loss.normaliser / share).clamp_min(1.0);
      objective = loss.total * (used / (share * provisional));  // images(batch) * sums(chunk) / K
      sums += loss.items * used;
      score_sum += loss.normaliser;
    } else {
      items += loss.items * share;
    }
    // The window's last backward reduces across ranks: the last chunk of its last batch.
    if (dp_) dp_->before_backward(state.micro + 1 >= accumulate && c + 1 == chunks.size());
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

void StepEngine::recover_from_out_of_memory(TrainState& state, const std::exception& e, std::int64_t batch) {
  const std::string cause = short_message(e);
  if (dp_) {
    throw Error("train: out of memory in data-parallel training (rank " + std::to_string(dist::current_env().rank) +
                "); a rank cannot retry alone while the others wait in the gradient all-reduce. Set "
                "stages.<train>.params.micro_batch below the batch (the value that fits one GPU). Cause: " +
                cause);
  }
  const std::int64_t next = halved_micro_batch(state.micro_batch, batch, cause);
  // Partial contributions of the failed chunk may be in any .grad: the window restarts.
  for (auto& np : model_.module().named_parameters()) np.value().mutable_grad() = torch::Tensor();
  state.micro = 0;
  release_cached_cuda_memory(device_);
  ++state.oom_retries;
  YF_LOG_WARN("train: out of memory in epoch " << state.epoch + 1 << ", batch " << state.step + 1 << " (" << cause
                                               << "); retrying it with micro_batch " << next << " (was "
                                               << (state.micro_batch > 0 ? state.micro_batch : batch)
                                               << "); this window's accumulated gradients were dropped");
  state.micro_batch = next;
}

void StepEngine::optimizer_step(TrainState& state) {
  if (dp_) dp_->before_step();  // gradients summed over the ranks
  std::vector<torch::Tensor> grads;
  for (auto& g : optimizer_->groups()) {
    for (auto& p : g.params) {
      if (p.grad().defined()) grads.push_back(p.grad());
    }
  }
  torch::Tensor found_inf = precision_->unscale(grads);
  clip_gradients(grads, clip_grad_);
  optimizer_->step(found_inf);
  precision_->update(found_inf);
  if (captured_) {
    at::_foreach_zero_(grads);  // captured graphs accumulate into these tensors; one launch, not ~250
  } else {
    for (auto& g : optimizer_->groups()) {
      for (auto& p : g.params) p.mutable_grad() = torch::Tensor();
    }
  }
  state.micro = 0;
  ++state.global_step;
  if (after_step_) after_step_();
}

// As Ultralytics: scale = size / longest side, each side rounded up to a multiple of the
// largest stride, bilinear.
torch::Tensor StepEngine::resize_for_multi_scale(const torch::Tensor& images, int size) const {
  const std::int64_t stride = largest_stride(model_.head()), h = images.size(2), w = images.size(3);
  const double scale = static_cast<double>(size) / static_cast<double>(std::max(h, w));
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

// A capture must find every gradient allocated: backward then accumulates into it in place.
void StepEngine::allocate_missing_grads() {
  for (auto& p : model_.module().parameters()) {
    if (p.requires_grad() && !p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
  }
}

}  // namespace yoloflow::core
