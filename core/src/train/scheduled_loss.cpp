#include "train/scheduled_loss.h"

#include <utility>

#include "pipeline/component_factory.h"
#include "plugin/host_registry.h"

namespace yoloflow::core {

ScheduledLoss::ScheduledLoss(const nlohmann::json& spec, const StageContext& context)
    : loss_(create_component<Loss>(host_registry(), Kind::Loss, spec, context.node, context)),
      params_(resolved(spec, context)),
      key_(params_.dump()) {}

nlohmann::json ScheduledLoss::resolved(const nlohmann::json& spec, const StageContext& context) const {
  const RegisteredComponent* rc = host_registry().find(Kind::Loss, spec.at("plugin").get<std::string>());
  return rc->info.schema.resolve(spec.value("params", nlohmann::json::object()), context.epoch, context.epochs);
}

void ScheduledLoss::at_epoch(const nlohmann::json& spec, const StageContext& context) {
  nlohmann::json params = resolved(spec, context);
  if (params == params_) return;
  configure_component(*loss_, *host_registry().find(Kind::Loss, spec.at("plugin").get<std::string>()), params,
                      context.node, context);
  params_ = std::move(params);
  key_ = params_.dump();
}

}  // namespace yoloflow::core
