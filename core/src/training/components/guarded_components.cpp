#include "training/components/guarded_components.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "training/components/component_guard.h"
#include "yoloflow/error.h"

namespace yoloflow::core {
namespace {

// What every wrapper has: the component, where it comes from, and configure() passed through.
template <class Interface>
class Guarded : public Interface {
 public:
  Guarded(std::unique_ptr<Interface> inner, ComponentOrigin origin) : inner_(std::move(inner)), origin_(std::move(origin)) {}
  void configure(const Params& params, const StageContext& context) override { inner_->configure(params, context); }

 protected:
  template <class F>
  decltype(auto) call(const char* what, F&& f) const {
    return guarded_call(origin_, what, std::forward<F>(f));
  }
  std::unique_ptr<Interface> inner_;
  ComponentOrigin origin_;
};

class GuardedModel final : public Guarded<Model> {
 public:
  using Guarded::Guarded;
  torch::nn::Module& module() override {
    return call("module", [&]() -> decltype(auto) { return inner_->module(); });
  }
  HeadDescription head() const override {
    return call("head", [&] { return inner_->head(); });
  }
  std::string architecture() const override {
    return call("architecture", [&] { return inner_->architecture(); });
  }
  // The head's contract (yoloflow/model.h's check_model_output), checked on every output: a
  // model that gives other outputs than it describes would feed a loss or an evaluator
  // something else than they were set up for.
  ModelOutput forward_train(const torch::Tensor& images) override {
    ModelOutput out = call("forward_train", [&] { return inner_->forward_train(images); });
    const std::string problem = check_model_output(out, head(), images.size(0));
    if (!problem.empty()) throw Error(origin_.text() + ": forward_train " + problem);
    return out;
  }
  Predictions decode(const ModelOutput& output) override {
    return call("decode", [&] { return inner_->decode(output); });
  }
  std::vector<LayerRow> layers() const override {
    return call("layers", [&] { return inner_->layers(); });
  }
  void set_activation_checkpointing(bool backbone, bool neck) override {
    call("set_activation_checkpointing", [&] { inner_->set_activation_checkpointing(backbone, neck); });
  }
  void export_graph(GraphBuilder& g) override {
    call("export_graph", [&] { inner_->export_graph(g); });
  }
};

class GuardedLoss final : public Guarded<Loss> {
 public:
  using Guarded::Guarded;
  void setup(const HeadDescription& head) override {
    call("setup", [&] { inner_->setup(head); });
  }
  std::vector<std::string> item_names() const override {
    return call("item_names", [&] { return inner_->item_names(); });
  }
  LossOutput compute(const ModelOutput& output, const LossTargets& targets, double min_normaliser) override {
    return call("compute", [&] { return inner_->compute(output, targets, min_normaliser); });
  }
};

class GuardedEvaluator final : public Guarded<Evaluator> {
 public:
  using Guarded::Guarded;
  void setup(const HeadDescription& head) override {
    call("setup", [&] { inner_->setup(head); });
  }
  std::vector<std::string> columns() const override {
    return call("columns", [&] { return inner_->columns(); });
  }
  std::vector<MetricColumn> table() const override {
    return call("table", [&] { return inner_->table(); });
  }
  void reset() override {
    call("reset", [&] { inner_->reset(); });
  }
  void add_batch(const Batch& batch, const std::vector<ImagePredictions>& predictions) override {
    call("add_batch", [&] { inner_->add_batch(batch, predictions); });
  }
  // What compute() gives is checked against what the evaluator declared
  // (yoloflow/evaluator.h's check_evaluation): results.csv and best.pt read it as declared.
  Evaluation compute() override {
    Evaluation e = call("compute", [&] { return inner_->compute(); });
    const std::string problem = check_evaluation(e, columns(), table().size());
    if (!problem.empty()) throw Error(origin_.text() + ": compute " + problem);
    return e;
  }
  std::vector<MatchedDetections> matched() const override {
    return call("matched", [&] { return inner_->matched(); });
  }
};

class GuardedOptimizer final : public Guarded<Optimizer> {
 public:
  using Guarded::Guarded;
  void setup(std::vector<ParamGroup> groups, const OptimizerSetup& setup) override {
    call("setup", [&] { inner_->setup(std::move(groups), setup); });
  }
  std::vector<ParamGroup>& groups() override {
    return call("groups", [&]() -> decltype(auto) { return inner_->groups(); });
  }
  void step(const at::Tensor& skip) override {
    call("step", [&] { inner_->step(skip); });
  }
  std::string description() const override {
    return call("description", [&] { return inner_->description(); });
  }
  NamedTensors state() const override {
    return call("state", [&] { return inner_->state(); });
  }
  void load_state(const std::map<std::string, at::Tensor>& state) override {
    call("load_state", [&] { inner_->load_state(state); });
  }
  WarmupTraits warmup_traits() const override {
    return call("warmup_traits", [&] { return inner_->warmup_traits(); });
  }
};

class GuardedPrecision final : public Guarded<PrecisionStrategy> {
 public:
  using Guarded::Guarded;
  at::ScalarType compute_dtype() const override {
    return call("compute_dtype", [&] { return inner_->compute_dtype(); });
  }
  bool supports(const c10::Device& device, std::string& why_not) const override {
    return call("supports", [&] { return inner_->supports(device, why_not); });
  }
  std::unique_ptr<AutocastScope> autocast(const c10::Device& device) override {
    return call("autocast", [&] { return inner_->autocast(device); });
  }
  at::Tensor scale_loss(const at::Tensor& loss) override {
    return call("scale_loss", [&] { return inner_->scale_loss(loss); });
  }
  at::Tensor unscale(const std::vector<at::Tensor>& grads) override {
    return call("unscale", [&] { return inner_->unscale(grads); });
  }
  void update(const at::Tensor& found_inf) override {
    call("update", [&] { inner_->update(found_inf); });
  }
  double scale() const override {
    return call("scale", [&] { return inner_->scale(); });
  }
  NamedTensors state() const override {
    return call("state", [&] { return inner_->state(); });
  }
  void load_state(const std::map<std::string, at::Tensor>& state) override {
    call("load_state", [&] { inner_->load_state(state); });
  }
};

class GuardedScheduler final : public Guarded<Scheduler> {
 public:
  using Guarded::Guarded;
  double lr_factor(int epoch, int epochs) const override {
    return call("lr_factor", [&] { return inner_->lr_factor(epoch, epochs); });
  }
};

}  // namespace

std::unique_ptr<Model> guard_component(std::unique_ptr<Model> component, ComponentOrigin origin) {
  return std::make_unique<GuardedModel>(std::move(component), std::move(origin));
}
std::unique_ptr<Loss> guard_component(std::unique_ptr<Loss> component, ComponentOrigin origin) {
  return std::make_unique<GuardedLoss>(std::move(component), std::move(origin));
}
std::unique_ptr<Evaluator> guard_component(std::unique_ptr<Evaluator> component, ComponentOrigin origin) {
  return std::make_unique<GuardedEvaluator>(std::move(component), std::move(origin));
}
std::unique_ptr<Optimizer> guard_component(std::unique_ptr<Optimizer> component, ComponentOrigin origin) {
  return std::make_unique<GuardedOptimizer>(std::move(component), std::move(origin));
}
std::unique_ptr<PrecisionStrategy> guard_component(std::unique_ptr<PrecisionStrategy> component, ComponentOrigin origin) {
  return std::make_unique<GuardedPrecision>(std::move(component), std::move(origin));
}
std::unique_ptr<Scheduler> guard_component(std::unique_ptr<Scheduler> component, ComponentOrigin origin) {
  return std::make_unique<GuardedScheduler>(std::move(component), std::move(origin));
}

}  // namespace yoloflow::core
