#include "training/step/training_parts.h"

#include <utility>

#include "training/components/guarded_components.h"
#include "training/step/train_setup.h"
#include "yoloflow/error.h"

namespace yoloflow::core {

TrainingPartsBuilder::TrainingPartsBuilder(const Registry& registry, Params params, StageContext context)
    : registry_(registry), params_(std::move(params)), context_(std::move(context)) {}

StageContext TrainingPartsBuilder::component_context(const std::string& param) const {
  StageContext sub = context_;
  sub.node = params_.where() + "." + param;
  return sub;
}

template <class T>
std::unique_ptr<T> TrainingPartsBuilder::make(Kind kind, const std::string& param, const json& spec) const {
  const StageContext sub = component_context(param);
  return create_guarded<T>(registry_, kind, spec, sub.node, sub);
}

json TrainingPartsBuilder::model_spec(const std::vector<std::string>& names) const {
  return model_spec_for_dataset(params_, static_cast<int>(names.size()));
}

std::unique_ptr<Model> TrainingPartsBuilder::model(const std::vector<std::string>& names, bool initial_weights) const {
  auto model = make<Model>(Kind::Model, "model", model_spec(names));
  if (initial_weights && !params_.is_null("weights")) {
    load_initial_weights(*model, params_.get_string("weights"), names, params_.where() + ".weights");
  }
  return model;
}

FrozenLayers TrainingPartsBuilder::freeze(Model& model) const {
  return FrozenLayers::apply(model.module(), params_.get_ints("freeze"), model.layers().size(), params_.where() + ".freeze");
}

std::unique_ptr<PrecisionStrategy> TrainingPartsBuilder::precision(const torch::Device& device) const {
  return precision(device, params_.get_json("precision"), "precision");
}

std::unique_ptr<PrecisionStrategy> TrainingPartsBuilder::precision(const torch::Device& device, const json& spec,
                                                                   const std::string& param) const {
  auto precision = make<PrecisionStrategy>(Kind::Precision, param, spec);
  std::string why;
  if (!precision->supports(device, why)) throw InvalidInput(params_.where() + "." + param + ": " + why);
  return precision;
}

std::unique_ptr<ScheduledLoss> TrainingPartsBuilder::loss(const HeadDescription& head) const {
  auto loss = std::make_unique<ScheduledLoss>(registry_, params_.get_json("loss"), component_context("loss"));
  loss->loss().setup(head);
  if (loss->loss().item_names().empty()) {
    throw Error(params_.where() + ".loss: the loss '" + params_.get_json("loss").at("plugin").get<std::string>() +
                "' names no components (item_names() is empty)");
  }
  return loss;
}

std::unique_ptr<Scheduler> TrainingPartsBuilder::scheduler() const {
  return make<Scheduler>(Kind::Scheduler, "scheduler", params_.get_json("scheduler"));
}

std::unique_ptr<Optimizer> TrainingPartsBuilder::optimizer() const {
  return make<Optimizer>(Kind::Optimizer, "optimizer", params_.get_json("optimizer"));
}

TargetRows TrainingPartsBuilder::target_rows() const {
  return TargetRows{params_.get_int("target_rows"), params_.get_int("target_rows_multiple"),
                    params_.get_int("cuda_graph_rows")};
}

}  // namespace yoloflow::core
