// The update rules, with PyTorch's semantics (torch.optim.SGD with dampening 0, Adam, AdamW),
// as multi-tensor (foreach) ops over a whole group. With a `keep` factor every change is
// scaled by it, so a skipped step (keep 0) leaves parameters and state exactly as they were.
#include <cmath>
#include <iomanip>
#include <sstream>

#include "grouped_optimizer.h"
#include "yoloflow/torch_compat.h"

namespace yoloflow::optim {
namespace {
std::string fmt(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}
}  // namespace

void Sgd::update(ParamGroup& group, GroupState& state, const std::vector<torch::Tensor>& params,
                 const std::vector<torch::Tensor>& grads,
                 std::map<std::string, std::vector<torch::Tensor>>& slots, const torch::Tensor& keep) {
  const double m = group.momentum, wd = group.weight_decay, lr = group.lr;
  // d_p = g + wd * p
  std::vector<torch::Tensor> d_p = wd != 0.0 ? at::_foreach_add(grads, params, wd) : grads;
  std::vector<torch::Tensor> direction;
  if (m != 0.0) {
    auto& buf = slots.at("momentum_buffer");
    // buf = m * buf + d_p (a zero buffer makes the first step buf = d_p, as PyTorch's clone).
    if (keep.defined()) {
      compat::foreach_mul_(buf, 1.0 + keep * (m - 1.0));
      at::_foreach_add_(buf, compat::foreach_mul(d_p, keep));
    } else {
      at::_foreach_mul_(buf, m);
      at::_foreach_add_(buf, d_p);
    }
    direction = opt_.nesterov ? at::_foreach_add(d_p, buf, m) : buf;
  } else {
    direction = d_p;
  }
  if (keep.defined()) direction = compat::foreach_mul(direction, keep);
  at::_foreach_add_(params, direction, -lr);
  state.step.add_(keep.defined() ? keep : torch::ones_like(state.step));
}

std::string Sgd::description() const {
  const double lr = groups_.empty() ? opt_.lr0 : groups_[0].initial_lr;
  return "SGD(lr=" + fmt(lr) + ", momentum=" + fmt(opt_.momentum) +
         ", nesterov=" + (opt_.nesterov ? "True" : "False") + ")";
}

void Adam::update(ParamGroup& group, GroupState& state, const std::vector<torch::Tensor>& params,
                  const std::vector<torch::Tensor>& grads_in,
                  std::map<std::string, std::vector<torch::Tensor>>& slots, const torch::Tensor& keep) {
  const double b1 = group.momentum, b2 = beta2, wd = group.weight_decay, lr = group.lr;
  auto& exp_avg = slots.at("exp_avg");
  auto& exp_avg_sq = slots.at("exp_avg_sq");
  std::vector<torch::Tensor> grads = grads_in;
  if (wd != 0.0) {
    if (decoupled_) {  // AdamW: p *= 1 - lr * wd
      if (keep.defined()) {
        compat::foreach_mul_(params, 1.0 - keep * (lr * wd));
      } else {
        at::_foreach_mul_(params, 1.0 - lr * wd);
      }
    } else {  // Adam: L2 penalty in the gradient
      grads = at::_foreach_add(grads, params, wd);
    }
  }
  auto grads_sq = at::_foreach_mul(grads, grads);
  if (keep.defined()) {
    // m += k (1 - b1)(g - m); v += k (1 - b2)(g^2 - v); step += k
    compat::foreach_mul_(exp_avg, 1.0 - keep * (1.0 - b1));
    at::_foreach_add_(exp_avg, compat::foreach_mul(grads, keep), 1.0 - b1);
    compat::foreach_mul_(exp_avg_sq, 1.0 - keep * (1.0 - b2));
    at::_foreach_add_(exp_avg_sq, compat::foreach_mul(grads_sq, keep), 1.0 - b2);
    state.step.add_(keep);
  } else {
    at::_foreach_mul_(exp_avg, b1);
    at::_foreach_add_(exp_avg, grads, 1.0 - b1);
    at::_foreach_mul_(exp_avg_sq, b2);
    at::_foreach_add_(exp_avg_sq, grads_sq, 1.0 - b2);
    state.step.add_(1.0);
  }
  // Bias corrections from the device-side step count (at least 1: a skipped first step
  // must not divide by zero).
  auto t = state.step.clamp_min(1.0);
  auto bc1 = 1.0 - torch::pow(b1, t);
  auto bc2 = 1.0 - torch::pow(b2, t);
  // p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps)
  auto denom = at::_foreach_sqrt(exp_avg_sq);
  compat::foreach_mul_(denom, bc2.rsqrt());
  at::_foreach_add_(denom, eps);
  auto ratio = at::_foreach_div(exp_avg, denom);
  auto step_size = -lr / bc1;
  if (keep.defined()) step_size = step_size * keep;
  compat::foreach_mul_(ratio, step_size);
  at::_foreach_add_(params, ratio);
}

std::string Adam::description() const {
  const double lr = groups_.empty() ? opt_.lr0 : groups_[0].initial_lr;
  const double b1 = groups_.empty() ? opt_.momentum : groups_[0].momentum;
  return std::string(decoupled_ ? "AdamW" : "Adam") + "(lr=" + fmt(lr) + ", betas=(" + fmt(b1) +
         ", " + fmt(beta2) + "))";
}

}  // namespace yoloflow::optim
