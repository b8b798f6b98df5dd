// Components the train sink calls deep inside a training step, each throwing there as a buggy
// plugin would: the host must name the component (its JSON path, kind, plugin and library) and
// the call that failed, not blame itself. Everything before the throwing call works, so that a
// real training run reaches it.
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "yoloflow/loss.h"
#include "yoloflow/model.h"
#include "yoloflow/optimizer.h"
#include "yoloflow/plugin.h"
#include "yoloflow/precision.h"
#include "yoloflow/scheduler.h"

namespace {

using namespace yoloflow;

// Indexes an empty table for the epoch, as a scheduler with an off-by-one table would:
// std::vector::at's own out_of_range message.
class ThrowingScheduler final : public Scheduler {
 public:
  double lr_factor(int epoch, int) const override { return factors_.at(static_cast<std::size_t>(epoch)); }

 private:
  std::vector<double> factors_;
};

// Reads a parameter its schema does not declare (a plugin bug): the error names the parameter by
// its full JSON path.
class UndeclaredParamLoss final : public Loss {
 public:
  void configure(const Params& p, const StageContext&) override { gain_ = p.get_float("gain"); }
  void setup(const HeadDescription&) override {}
  std::vector<std::string> item_names() const override { return {"box"}; }
  LossOutput compute(const ModelOutput&, const LossTargets&, double) override { return {}; }

 private:
  double gain_ = 1.0;
};

class ThrowingLoss final : public Loss {
 public:
  void setup(const HeadDescription&) override {}
  std::vector<std::string> item_names() const override { return {"box"}; }
  LossOutput compute(const ModelOutput&, const LossTargets&, double) override {
    throw std::runtime_error("test_throwing_loss: compute failed on purpose");
  }
};

// Sets every group up as an optimizer must (a learning rate each), then fails to step.
class ThrowingOptimizer final : public Optimizer {
 public:
  void setup(std::vector<ParamGroup> groups, const OptimizerSetup&) override {
    groups_ = std::move(groups);
    for (auto& g : groups_) {
      g.lr = g.initial_lr = 0.01;
      g.momentum = 0.9;
    }
  }
  std::vector<ParamGroup>& groups() override { return groups_; }
  void step(const at::Tensor&) override { throw std::runtime_error("test_throwing_optimizer: step failed on purpose"); }
  std::string description() const override { return "ThrowingOptimizer()"; }
  NamedTensors state() const override { return {}; }
  void load_state(const std::map<std::string, at::Tensor>&) override {}

 private:
  std::vector<ParamGroup> groups_;
};

class NoAutocast final : public AutocastScope {};

// Full precision until the loss is to be scaled for backward.
class ThrowingPrecision final : public PrecisionStrategy {
 public:
  at::ScalarType compute_dtype() const override { return at::kFloat; }
  bool supports(const c10::Device&, std::string&) const override { return true; }
  std::unique_ptr<AutocastScope> autocast(const c10::Device&) override { return std::make_unique<NoAutocast>(); }
  at::Tensor scale_loss(const at::Tensor&) override {
    throw std::runtime_error("test_throwing_precision: scale_loss failed on purpose");
  }
  at::Tensor unscale(const std::vector<at::Tensor>& grads) override {
    return torch::zeros({}, grads.empty() ? torch::TensorOptions() : grads[0].options());
  }
  void update(const at::Tensor&) override {}
  double scale() const override { return 1.0; }
  NamedTensors state() const override { return {}; }
  void load_state(const std::map<std::string, at::Tensor>&) override {}
};

// A network of one convolution and a batch norm (a parameter in each of the recipe's weights,
// norm and bias groups) with a YOLO-like head description, failing in its forward pass.
struct OneConv : torch::nn::Module {
  OneConv() {
    conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 4, 1)));
    bn = register_module("bn", torch::nn::BatchNorm2d(4));
  }
  torch::nn::Conv2d conv{nullptr};
  torch::nn::BatchNorm2d bn{nullptr};
};

class ThrowingModel final : public Model {
 public:
  void configure(const Params& p, const StageContext&) override { nc_ = static_cast<int>(p.get_int("nc")); }
  torch::nn::Module& module() override { return *net_; }
  HeadDescription head() const override { HeadDescription h;
    h.nc = nc_ > 0 ? nc_ : 80;
    h.strides = {8, 16, 32};
    return h; }
  std::string architecture() const override { return "test_throwing_model"; }
  ModelOutput forward_train(const torch::Tensor&) override {
    throw std::runtime_error("test_throwing_model: forward_train failed on purpose");
  }
  Predictions decode(const ModelOutput&) override { return {}; }
  std::vector<LayerRow> layers() const override { return {}; }
  void set_activation_checkpointing(bool, bool) override {}

 private:
  std::shared_ptr<OneConv> net_ = std::make_shared<OneConv>();
  int nc_ = 80;
};

void register_it(Registrar& r) {
  r.add_scheduler<ThrowingScheduler>("test_throwing_scheduler", Schema(), "Fails in lr_factor (test plugin).");
  r.add_loss<ThrowingLoss>("test_throwing_loss", Schema(), "Fails in compute (test plugin).");
  r.add_loss<UndeclaredParamLoss>("test_undeclared_param_loss", Schema(),
                                  "Reads an undeclared parameter in configure (test plugin).");
  r.add_optimizer<ThrowingOptimizer>("test_throwing_optimizer", Schema(), "Fails in step (test plugin).");
  r.add_precision<ThrowingPrecision>("test_throwing_precision", Schema(), "Fails in scale_loss (test plugin).");
  Schema model;
  model.add_int("nc", 0).min(0).doc("Classes (0: the dataset's).");
  r.add_model<ThrowingModel>("test_throwing_model", std::move(model), "Fails in forward_train (test plugin).");
}

}  // namespace

YOLOFLOW_PLUGIN("test_throwing_components", "1.0.0", register_it)
