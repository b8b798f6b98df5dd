#include "loss_scaler.h"

#include <limits>

#include "yoloflow/error.h"
#include "yoloflow/torch_compat.h"

namespace yoloflow::precision {

LossScaler::LossScaler(LossScalerOptions options) : opt_(options) {
  scale_ = torch::full({}, opt_.init_scale, torch::kFloat);
  tracker_ = torch::zeros({}, torch::kInt);
}

void LossScaler::set_options(const LossScalerOptions& options) {
  const bool rescale = options.init_scale != opt_.init_scale;
  opt_ = options;
  if (rescale) scale_.fill_(opt_.init_scale);
}

void LossScaler::to_device(const torch::Device& device) {
  if (scale_.device() != device) {
    scale_ = scale_.to(device);
    tracker_ = tracker_.to(device);
  }
}

torch::Tensor LossScaler::scale_loss(const torch::Tensor& loss) {
  to_device(loss.device());
  return loss.to(torch::kFloat) * scale_;
}

torch::Tensor LossScaler::unscale(const std::vector<torch::Tensor>& grads_in) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> grads;
  for (const auto& g : grads_in) {
    if (g.defined()) grads.push_back(g);
  }
  if (!grads.empty()) to_device(grads[0].device());
  auto found_inf = torch::zeros({}, scale_.options());
  if (grads.empty()) return found_inf;
  // Reciprocal in double, as GradScaler does, so the product is as exact as fp32 allows.
  auto inv_scale = scale_.to(torch::kDouble).reciprocal().to(torch::kFloat);
#ifdef YOLOFLOW_WITH_CUDA
  if (scale_.is_cuda()) {
    at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale);
    return found_inf;
  }
#endif
  // LibTorch 1.13 has the fused kernel for CUDA only: the same with multi-tensor ops.
  compat::foreach_mul_(grads, inv_scale);
  auto norms = at::_foreach_norm(grads, std::numeric_limits<double>::infinity());
  found_inf = torch::stack(norms).isfinite().logical_not().any().to(torch::kFloat);
  return found_inf;
}

void LossScaler::update(const torch::Tensor& found_inf) {
  torch::NoGradGuard no_grad;
  if (!found_inf.defined()) return;
  to_device(found_inf.device());
#ifdef YOLOFLOW_WITH_CUDA
  if (scale_.is_cuda()) {
    at::_amp_update_scale_(scale_, tracker_, found_inf.to(torch::kFloat), opt_.growth_factor,
                           opt_.backoff_factor, opt_.growth_interval);
    return;
  }
#endif
  // Overflow: back off, restart the count. Else count; at the interval grow (if the grown
  // scale is finite) and restart the count.
  auto overflow = found_inf > 0;
  auto counted = tracker_ + 1;
  auto interval_done = counted >= opt_.growth_interval;
  auto grown = scale_ * opt_.growth_factor;
  auto new_scale = torch::where(
      overflow, scale_ * opt_.backoff_factor,
      torch::where(interval_done & grown.isfinite(), grown, scale_));
  auto new_tracker = torch::where(overflow | interval_done, torch::zeros_like(counted), counted);
  scale_.copy_(new_scale);
  tracker_.copy_(new_tracker);
}

double LossScaler::scale() const { return scale_.item<double>(); }

NamedTensors LossScaler::state() const { return {{"scale", scale_}, {"growth_tracker", tracker_}}; }

void LossScaler::load_state(const std::map<std::string, torch::Tensor>& state) {
  for (const char* key : {"scale", "growth_tracker"}) {
    const auto it = state.find(key);
    if (it == state.end()) throw Error(std::string("loss scaler state has no entry '") + key + "'.");
    if (it->second.numel() != 1) throw Error(std::string("loss scaler state entry '") + key + "' is not a scalar.");
  }
  scale_.copy_(state.at("scale").reshape({}));
  tracker_.copy_(state.at("growth_tracker").reshape({}));
}

}  // namespace yoloflow::precision
