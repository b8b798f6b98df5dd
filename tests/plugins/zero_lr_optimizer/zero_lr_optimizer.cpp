// An optimizer that breaks the contract of yoloflow/optimizer.h: its setup() keeps the groups
// as the host handed them (every learning rate 0). The host must refuse it before training.
#include "yoloflow/optimizer.h"
#include "yoloflow/plugin.h"

namespace {
class ZeroLr final : public yoloflow::Optimizer {
 public:
  void configure(const yoloflow::Params&, const yoloflow::StageContext&) override {}
  void setup(std::vector<yoloflow::ParamGroup> groups, const yoloflow::OptimizerSetup&) override {
    groups_ = std::move(groups);
  }
  std::vector<yoloflow::ParamGroup>& groups() override { return groups_; }
  void step(const at::Tensor&) override {}
  std::string description() const override { return "ZeroLr()"; }
  yoloflow::NamedTensors state() const override { return {}; }
  void load_state(const std::map<std::string, at::Tensor>&) override {}

 private:
  std::vector<yoloflow::ParamGroup> groups_;
};

void register_zero_lr(yoloflow::Registrar& r) {
  r.add_optimizer<ZeroLr>("test_zero_lr", yoloflow::Schema(), "Leaves every learning rate 0 (test plugin).");
}
}  // namespace

YOLOFLOW_PLUGIN("test_zero_lr_optimizer", "1.0.0", register_zero_lr)
