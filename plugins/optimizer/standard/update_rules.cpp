// The update rules, with PyTorch's semantics (torch.optim.SGD with dampening 0, Adam, AdamW,
// NAdam, RAdam, Adamax, RMSprop), as multi-tensor (foreach) ops over a whole group. With a `keep` factor every change is
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

// Adam's moments: m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2, step + 1; with `keep`, each
// change scaled by it.
void update_moments(std::vector<torch::Tensor>& exp_avg, std::vector<torch::Tensor>& exp_avg_sq,
                    const std::vector<torch::Tensor>& grads, double b1, double b2, torch::Tensor& step,
                    const torch::Tensor& keep) {
  auto grads_sq = at::_foreach_mul(grads, grads);
  if (keep.defined()) {
    // m += k (1 - b1)(g - m); v += k (1 - b2)(g^2 - v); step += k
    compat::foreach_mul_(exp_avg, 1.0 - keep * (1.0 - b1));
    at::_foreach_add_(exp_avg, compat::foreach_mul(grads, keep), 1.0 - b1);
    compat::foreach_mul_(exp_avg_sq, 1.0 - keep * (1.0 - b2));
    at::_foreach_add_(exp_avg_sq, compat::foreach_mul(grads_sq, keep), 1.0 - b2);
    step.add_(keep);
  } else {
    at::_foreach_mul_(exp_avg, b1);
    at::_foreach_add_(exp_avg, grads, 1.0 - b1);
    at::_foreach_mul_(exp_avg_sq, b2);
    at::_foreach_add_(exp_avg_sq, grads_sq, 1.0 - b2);
    step.add_(1.0);
  }
}

// p += factor * a / b, `factor` a 0-dim tensor on the device.
void add_scaled_ratio(const std::vector<torch::Tensor>& params, const std::vector<torch::Tensor>& a,
                      const std::vector<torch::Tensor>& b, const torch::Tensor& factor) {
  auto ratio = at::_foreach_div(a, b);
  compat::foreach_mul_(ratio, factor);
  at::_foreach_add_(params, ratio);
}

std::string betas_description(const std::string& name, const std::vector<ParamGroup>& groups,
                              const OptimizerParams& opt, double beta2) {
  const double lr = groups.empty() ? opt.lr0 : groups[0].initial_lr;
  const double b1 = groups.empty() ? opt.momentum : groups[0].momentum;
  return name + "(lr=" + fmt(lr) + ", betas=(" + fmt(b1) + ", " + fmt(beta2) + "))";
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
  update_moments(exp_avg, exp_avg_sq, grads, b1, b2, state.step, keep);
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
  return betas_description(decoupled_ ? "AdamW" : "Adam", groups_, opt_, beta2);
}

void NAdam::update(ParamGroup& group, GroupState& state, const std::vector<torch::Tensor>& params,
                   const std::vector<torch::Tensor>& grads_in,
                   std::map<std::string, std::vector<torch::Tensor>>& slots, const torch::Tensor& keep) {
  const double b1 = group.momentum, wd = group.weight_decay, lr = group.lr;
  auto& exp_avg = slots.at("exp_avg");
  auto& exp_avg_sq = slots.at("exp_avg_sq");
  auto& mu_product = state.scalars.at("mu_product");
  const std::vector<torch::Tensor> grads = wd != 0.0 ? at::_foreach_add(grads_in, params, wd) : grads_in;
  update_moments(exp_avg, exp_avg_sq, grads, b1, beta2, state.step, keep);
  // The momentum schedule of this step and the next: mu_t = b1 (1 - 0.5 * 0.96^(t psi)).
  const auto t = state.step.clamp_min(1.0);
  const auto mu = b1 * (1.0 - 0.5 * torch::pow(0.96, t * momentum_decay));
  const auto mu_next = b1 * (1.0 - 0.5 * torch::pow(0.96, (t + 1.0) * momentum_decay));
  mu_product.mul_(keep.defined() ? 1.0 + keep * (mu - 1.0) : mu);
  // denom = sqrt(v / (1 - b2^t)) + eps
  auto denom = at::_foreach_sqrt(exp_avg_sq);
  compat::foreach_mul_(denom, (1.0 - torch::pow(beta2, t)).rsqrt());
  at::_foreach_add_(denom, eps);
  // p -= lr (1 - mu) / (1 - prod mu) * g / denom + lr mu_next / (1 - prod mu * mu_next) * m / denom.
  // (1 - prod mu) is 0 only before any step, when a skipped first step scales all by 0.
  auto grad_step = -lr * (1.0 - mu) / (1.0 - mu_product).clamp_min(1e-12);
  auto avg_step = -lr * mu_next / (1.0 - mu_product * mu_next).clamp_min(1e-12);
  if (keep.defined()) {
    grad_step = grad_step * keep;
    avg_step = avg_step * keep;
  }
  add_scaled_ratio(params, grads, denom, grad_step);
  add_scaled_ratio(params, exp_avg, denom, avg_step);
}

std::string NAdam::description() const { return betas_description("NAdam", groups_, opt_, beta2); }

void RAdam::update(ParamGroup& group, GroupState& state, const std::vector<torch::Tensor>& params,
                   const std::vector<torch::Tensor>& grads_in,
                   std::map<std::string, std::vector<torch::Tensor>>& slots, const torch::Tensor& keep) {
  const double b1 = group.momentum, b2 = beta2, wd = group.weight_decay, lr = group.lr;
  auto& exp_avg = slots.at("exp_avg");
  auto& exp_avg_sq = slots.at("exp_avg_sq");
  const std::vector<torch::Tensor> grads = wd != 0.0 ? at::_foreach_add(grads_in, params, wd) : grads_in;
  update_moments(exp_avg, exp_avg_sq, grads, b1, b2, state.step, keep);
  // The rectification in double: rho_t is a small difference of two numbers near 2 / (1 - b2)
  // (1993 and 1999 at step 6), which float32 would get wrong by a fraction of a percent.
  const auto t = state.step.clamp_min(1.0).to(torch::kDouble);
  const auto b2_t = torch::pow(b2, t);
  const auto bc1 = 1.0 - torch::pow(b1, t);
  const auto bc2 = 1.0 - b2_t;
  const double rho_inf = 2.0 / (1.0 - b2) - 1.0;
  const auto rho_t = rho_inf - 2.0 * t * b2_t / bc2;
  // Decided on the device: the rectified step once rho_t > 5, plain momentum before.
  const auto rectified = (rho_t > 5.0).to(torch::kDouble);
  const auto rho = rho_t.clamp_min(5.0);  // the rectifier's own domain; unused before then
  const auto rect = ((rho - 4.0) * (rho - 2.0) * rho_inf / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho)).sqrt();
  // p -= lr m / bc1 * rect sqrt(bc2) / (sqrt(v) + eps)   (rectified)
  // p -= lr m / bc1                                       (before)
  auto plain_step = (-lr / bc1 * (1.0 - rectified)).to(torch::kFloat);
  auto adaptive_step = (-lr / bc1 * rectified * rect * bc2.sqrt()).to(torch::kFloat);
  if (keep.defined()) {
    plain_step = plain_step * keep;
    adaptive_step = adaptive_step * keep;
  }
  at::_foreach_add_(params, compat::foreach_mul(exp_avg, plain_step));
  auto denom = at::_foreach_sqrt(exp_avg_sq);
  at::_foreach_add_(denom, eps);
  add_scaled_ratio(params, exp_avg, denom, adaptive_step);
}

std::string RAdam::description() const { return betas_description("RAdam", groups_, opt_, beta2); }

void Adamax::update(ParamGroup& group, GroupState& state, const std::vector<torch::Tensor>& params,
                    const std::vector<torch::Tensor>& grads_in,
                    std::map<std::string, std::vector<torch::Tensor>>& slots, const torch::Tensor& keep) {
  const double b1 = group.momentum, wd = group.weight_decay, lr = group.lr;
  auto& exp_avg = slots.at("exp_avg");
  auto& exp_inf = slots.at("exp_inf");
  const std::vector<torch::Tensor> grads = wd != 0.0 ? at::_foreach_add(grads_in, params, wd) : grads_in;
  // u = max(b2 u, |g| + eps)
  auto bound = at::_foreach_abs(grads);
  at::_foreach_add_(bound, eps);
  auto decayed = at::_foreach_mul(exp_inf, beta2);
  auto next = at::_foreach_maximum(decayed, bound);
  if (keep.defined()) {
    // m += k (1 - b1)(g - m); u += k (next - u); step += k
    compat::foreach_mul_(exp_avg, 1.0 - keep * (1.0 - b1));
    at::_foreach_add_(exp_avg, compat::foreach_mul(grads, keep), 1.0 - b1);
    at::_foreach_sub_(next, exp_inf);
    at::_foreach_add_(exp_inf, compat::foreach_mul(next, keep));
    state.step.add_(keep);
  } else {
    at::_foreach_mul_(exp_avg, b1);
    at::_foreach_add_(exp_avg, grads, 1.0 - b1);
    for (std::size_t i = 0; i < exp_inf.size(); ++i) exp_inf[i].copy_(next[i]);
    state.step.add_(1.0);
  }
  // p -= lr / (1 - b1^t) * m / u. u >= eps after any step; before one (a skipped first step) it
  // is 0, and 1e-30, which rounds away beside eps, keeps that 0 / 0 from becoming NaN.
  auto denom = at::_foreach_add(exp_inf, 1e-30);
  auto step_size = -lr / (1.0 - torch::pow(b1, state.step.clamp_min(1.0)));
  if (keep.defined()) step_size = step_size * keep;
  add_scaled_ratio(params, exp_avg, denom, step_size);
}

std::string Adamax::description() const { return betas_description("Adamax", groups_, opt_, beta2); }

void RmsProp::update(ParamGroup& group, GroupState& state, const std::vector<torch::Tensor>& params,
                     const std::vector<torch::Tensor>& grads,
                     std::map<std::string, std::vector<torch::Tensor>>& slots, const torch::Tensor& keep) {
  const double m = group.momentum, wd = group.weight_decay, lr = group.lr;
  auto& square_avg = slots.at("square_avg");
  // d = g + wd * p; s = alpha s + (1 - alpha) d^2
  const std::vector<torch::Tensor> d = wd != 0.0 ? at::_foreach_add(grads, params, wd) : grads;
  const auto d_sq = at::_foreach_mul(d, d);
  if (keep.defined()) {
    compat::foreach_mul_(square_avg, 1.0 - keep * (1.0 - alpha));
    at::_foreach_add_(square_avg, compat::foreach_mul(d_sq, keep), 1.0 - alpha);
  } else {
    at::_foreach_mul_(square_avg, alpha);
    at::_foreach_add_(square_avg, d_sq, 1.0 - alpha);
  }
  auto avg = at::_foreach_sqrt(square_avg);
  at::_foreach_add_(avg, eps);
  auto direction = at::_foreach_div(d, avg);
  if (m != 0.0) {
    // buf = m buf + d / (sqrt(s) + eps); p -= lr buf
    auto& buf = slots.at("momentum_buffer");
    if (keep.defined()) {
      compat::foreach_mul_(buf, 1.0 + keep * (m - 1.0));
      at::_foreach_add_(buf, compat::foreach_mul(direction, keep));
    } else {
      at::_foreach_mul_(buf, m);
      at::_foreach_add_(buf, direction);
    }
    direction = buf;
  }
  if (keep.defined()) direction = compat::foreach_mul(direction, keep);
  at::_foreach_add_(params, direction, -lr);
  state.step.add_(keep.defined() ? keep : torch::ones_like(state.step));
}

std::string RmsProp::description() const {
  const double lr = groups_.empty() ? opt_.lr0 : groups_[0].initial_lr;
  return "RMSprop(lr=" + fmt(lr) + ", momentum=" + fmt(opt_.momentum) + ")";
}

}  // namespace yoloflow::optim
