// The three standard precision strategies and their registration.
#include <memory>

#include "loss_scaler.h"
#include "yoloflow/error.h"
#include "yoloflow/log.h"
#include "yoloflow/plugin.h"
#include "yoloflow/precision.h"
#include "yoloflow/torch_compat.h"

namespace yoloflow::precision {
namespace {

class GuardScope final : public AutocastScope {
 public:
  GuardScope(c10::DeviceType device, bool enabled, at::ScalarType dtype) : guard_(device, enabled, dtype) {}

 private:
  compat::AutocastGuard guard_;
};

// Every strategy's autocast scope: refuse a device the strategy does not support (with its
// reason), else autocast to its compute dtype, or switch autocast off (`enabled` false).
std::unique_ptr<AutocastScope> autocast_scope(const PrecisionStrategy& s, const torch::Device& device, bool enabled) {
  std::string why;
  if (!s.supports(device, why)) throw Error(why);
  return std::make_unique<GuardScope>(device.type(), enabled, s.compute_dtype());
}

// Strategies without loss scaling: the loss and gradients pass unchanged, no step is skipped.
class WithoutLossScaling : public PrecisionStrategy {
 public:
  torch::Tensor scale_loss(const torch::Tensor& loss) override { return loss; }
  torch::Tensor unscale(const std::vector<torch::Tensor>&) override { return {}; }
  void update(const torch::Tensor&) override {}
  double scale() const override { return 1.0; }
  NamedTensors state() const override { return {}; }
  void load_state(const std::map<std::string, torch::Tensor>&) override {}
};

// Everything in fp32: autocast is switched off inside the scope even if a caller enabled it.
class Fp32 final : public WithoutLossScaling {
 public:
  torch::ScalarType compute_dtype() const override { return torch::kFloat; }
  bool supports(const torch::Device&, std::string&) const override { return true; }
  std::unique_ptr<AutocastScope> autocast(const torch::Device& device) override {
    return autocast_scope(*this, device, false);
  }
};

// fp16 autocast on CUDA with dynamic loss scaling (fp16's range is too narrow for raw
// gradients).
class AmpFp16 : public PrecisionStrategy {
 public:
  void configure(const Params& p, const StageContext&) override {
    LossScalerOptions o;
    o.init_scale = p.get_float("init_scale");
    o.growth_factor = p.get_float("growth_factor");
    o.backoff_factor = p.get_float("backoff_factor");
    o.growth_interval = p.get_int("growth_interval");
    scaler_.set_options(o);
  }
  torch::ScalarType compute_dtype() const override { return torch::kHalf; }
  bool supports(const torch::Device& device, std::string& why_not) const override {
    if (device.is_cuda()) return true;
    why_not = "amp_fp16 needs a CUDA device: LibTorch has no fp16 autocast on " + device.str() +
              " (1.13); use amp (fp32 there), amp_bf16 or fp32.";
    return false;
  }
  std::unique_ptr<AutocastScope> autocast(const torch::Device& device) override {
    return autocast_scope(*this, device, true);
  }
  torch::Tensor scale_loss(const torch::Tensor& loss) override { return scaler_.scale_loss(loss); }
  torch::Tensor unscale(const std::vector<torch::Tensor>& grads) override { return scaler_.unscale(grads); }
  void update(const torch::Tensor& found_inf) override { scaler_.update(found_inf); }
  double scale() const override { return scaler_.scale(); }
  NamedTensors state() const override { return scaler_.state(); }
  void load_state(const std::map<std::string, torch::Tensor>& state) override { scaler_.load_state(state); }

 protected:
  LossScaler scaler_;
};

// Ultralytics' `amp=True`: amp_fp16 where the device has fp16 autocast (CUDA), fp32 elsewhere
// (LibTorch has no fp16 autocast on the CPU), said once in the log. What runs is decided by the
// device of the tensors each call sees, so one pipeline trains on either.
class Amp final : public AmpFp16 {
 public:
  bool supports(const torch::Device& device, std::string& why_not) const override {
    if (device.is_cuda() || device.is_cpu()) return true;
    why_not = "amp runs on CUDA (fp16) or CPU (fp32), not " + device.str() + ".";
    return false;
  }
  std::unique_ptr<AutocastScope> autocast(const torch::Device& device) override {
    if (!device.is_cuda() && !said_fp32_) {
      said_fp32_ = true;
      YF_LOG_INFO("amp: no fp16 autocast on " << device.str() << "; training in fp32 there");
    }
    on_cuda_ = device.is_cuda();
    return autocast_scope(*this, device, device.is_cuda());
  }
  // What runs: fp16 autocast on CUDA, none (fp32) on another device once one was seen.
  torch::ScalarType compute_dtype() const override { return on_cuda_ ? AmpFp16::compute_dtype() : torch::kFloat; }
  // What scale_loss multiplies by: the scaler's scale on CUDA, 1 in fp32 on another device (the
  // scaler is kept, and checkpointed, for a run that moves to CUDA).
  double scale() const override { return on_cuda_ ? AmpFp16::scale() : 1.0; }
  torch::Tensor scale_loss(const torch::Tensor& loss) override {
    return loss.is_cuda() ? AmpFp16::scale_loss(loss) : loss;
  }
  torch::Tensor unscale(const std::vector<torch::Tensor>& grads) override {
    for (const auto& g : grads) {
      if (g.defined()) return g.is_cuda() ? AmpFp16::unscale(grads) : torch::Tensor();
    }
    return {};
  }
  void update(const torch::Tensor& found_inf) override {
    if (found_inf.defined()) AmpFp16::update(found_inf);
  }

 private:
  bool said_fp32_ = false;
  bool on_cuda_ = true;  // the device of the last autocast(); CUDA until one is seen
};

// bf16 autocast: fp32's range, so no loss scaling and no skipped steps.
class AmpBf16 final : public WithoutLossScaling {
 public:
  torch::ScalarType compute_dtype() const override { return torch::kBFloat16; }
  bool supports(const torch::Device& device, std::string& why_not) const override {
    if (device.is_cpu() || device.is_cuda()) return true;
    why_not = "amp_bf16 runs on CPU or CUDA, not " + device.str() + ".";
    return false;
  }
  std::unique_ptr<AutocastScope> autocast(const torch::Device& device) override {
    return autocast_scope(*this, device, true);
  }
};

void register_precision(Registrar& r) {
  r.add_precision<Fp32>("fp32", Schema{}, "Full fp32: no autocast, no loss scaling.");
  Schema fp16;
  fp16.add_float("init_scale", 65536.0).greater_than(0.0).fixed().doc("Initial loss scale.");
  fp16.add_float("growth_factor", 2.0).greater_than(1.0).doc("Scale multiplier after growth_interval clean steps.");
  fp16.add_float("backoff_factor", 0.5).greater_than(0.0).max(0.999).doc("Scale multiplier after an overflow.");
  fp16.add_int("growth_interval", 2000).min(1).fixed().doc("Clean steps before the scale grows.");
  Schema amp = fp16;
  r.add_precision<AmpFp16>("amp_fp16", std::move(fp16),
                           "fp16 autocast on CUDA with dynamic loss scaling; overflowing steps are skipped on the device.");
  r.add_precision<Amp>("amp", std::move(amp),
                       "Ultralytics' amp=True: amp_fp16 on CUDA, fp32 on the CPU (no fp16 autocast there); "
                       "the shipped training pipelines' default.");
  r.add_precision<AmpBf16>("amp_bf16", Schema{}, "bf16 autocast on CPU or CUDA, no loss scaling.");
}

}  // namespace
}  // namespace yoloflow::precision

YOLOFLOW_PLUGIN("precision_standard", "1.0.0", yoloflow::precision::register_precision)
