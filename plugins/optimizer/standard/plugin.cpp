// Registers sgd, adam, adamw, nadam, radam, adamax, rmsprop and auto. `auto` is Ultralytics' rule: SGD
// for long runs, AdamW with a class-count-dependent learning rate for short ones.
#include <cmath>
#include <memory>
#include <sstream>

#include "grouped_optimizer.h"
#include "yoloflow/error.h"
#include "yoloflow/plugin.h"

namespace yoloflow::optim {
namespace {

class AutoOptimizer final : public Optimizer {
 public:
  void configure(const Params& params, const StageContext& context) override {
    params_ = params;
    context_ = context;
  }
  void setup(std::vector<ParamGroup> groups, const OptimizerSetup& setup) override {
    std::ostringstream why;
    if (setup.total_iterations > 10000) {
      inner_ = std::make_unique<Sgd>();
      inner_->configure(params_, context_);
      inner_->options().lr0 = 0.01;
      inner_->options().momentum = 0.9;
      inner_->options().nesterov = true;
      why << setup.total_iterations << " iterations > 10000";
    } else {
      inner_ = std::make_unique<Adam>(/*decoupled=*/true);
      inner_->configure(params_, context_);
      // lr = round(0.002 * 5 / (4 + nc), 6)
      inner_->options().lr0 = std::round(0.002 * 5.0 / (4.0 + setup.nc) * 1e6) / 1e6;
      inner_->options().momentum = 0.9;
      why << setup.total_iterations << " iterations <= 10000, nc " << setup.nc;
    }
    inner_->setup(std::move(groups), setup);
    reason_ = why.str();
  }
  std::vector<ParamGroup>& groups() override { return inner().groups(); }
  void step(const torch::Tensor& skip) override { inner().step(skip); }
  std::string description() const override {
    if (!inner_) return "auto (not set up)";
    return inner_->description() + " chosen by auto: " + reason_;
  }
  // Ultralytics' auto turns the bias warmup off whatever it picks; momentum as the one it picked.
  WarmupTraits warmup_traits() const override { return {false, inner().warmup_traits().momentum}; }
  NamedTensors state() const override { return inner_ ? inner_->state() : NamedTensors{}; }
  void load_state(const std::map<std::string, torch::Tensor>& state) override { inner().load_state(state); }

 private:
  GroupedOptimizer& inner() const {
    if (!inner_) throw Error("optimizer 'auto' was used before setup().");
    return *inner_;
  }
  Params params_;
  StageContext context_;
  std::unique_ptr<GroupedOptimizer> inner_;
  std::string reason_;
};

class SgdPlugin final : public Sgd {};
class AdamPlugin final : public Adam {
 public:
  AdamPlugin() : Adam(false) {}
};
class AdamWPlugin final : public Adam {
 public:
  AdamWPlugin() : Adam(true) {}
};
class NAdamPlugin final : public NAdam {};
class RAdamPlugin final : public RAdam {};
class AdamaxPlugin final : public Adamax {};
class RmsPropPlugin final : public RmsProp {};

Schema schema(bool with_nesterov) {
  Schema s;
  s.add_float("lr0", 0.01).greater_than(0.0).fixed().doc("Initial learning rate (the host's schedules scale it).");
  s.add_float("momentum", 0.937).range(0.0, 0.999999).doc("SGD's and RMSprop's momentum, or the Adam family's beta1.");
  s.add_float("weight_decay", 5e-4).min(0.0).doc(
      "Weight decay of the 'weights' group (the host scales it by batch size; norm weights and biases get none).");
  if (with_nesterov) s.add_bool("nesterov", true).doc("Nesterov momentum.");
  return s;
}

void register_optimizers(Registrar& r) {
  r.add_optimizer<SgdPlugin>("sgd", schema(true),
                             "SGD with momentum (Nesterov by default), multi-tensor updates, device-side step skipping.");
  r.add_optimizer<AdamPlugin>("adam", schema(false), "Adam (L2 weight decay), betas (momentum, 0.999).");
  r.add_optimizer<AdamWPlugin>("adamw", schema(false), "AdamW (decoupled weight decay), betas (momentum, 0.999).");
  r.add_optimizer<NAdamPlugin>("nadam", schema(false),
                               "NAdam (L2 weight decay, momentum_decay 0.004), betas (momentum, 0.999).");
  r.add_optimizer<RAdamPlugin>("radam", schema(false),
                               "RAdam (L2 weight decay, rectified adaptive step), betas (momentum, 0.999).");
  r.add_optimizer<AdamaxPlugin>("adamax", schema(false),
                                "Adamax (L2 weight decay, infinity-norm second moment), betas (momentum, 0.999).");
  r.add_optimizer<RmsPropPlugin>("rmsprop", schema(false),
                                 "RMSprop (alpha 0.99, L2 weight decay) with momentum, which warmup ramps as SGD's.");
  r.add_optimizer<AutoOptimizer>(
      "auto", schema(true),
      "Ultralytics' choice: SGD(lr 0.01, momentum 0.9) above 10,000 iterations, else AdamW(lr 0.002*5/(4+nc), beta1 0.9).");
}

}  // namespace
}  // namespace yoloflow::optim

YOLOFLOW_PLUGIN("optimizer_standard", "1.0.0", yoloflow::optim::register_optimizers)
