#include "training/step/scheduled_loss.h"

#include <utility>

#include "runtime/pipeline/component_factory.h"
#include "training/components/guarded_components.h"

namespace yoloflow::core {

ScheduledLoss::ScheduledLoss(const Registry& registry, const nlohmann::json& spec, const StageContext& context)
    : loss_(create_guarded<Loss>(registry, Kind::Loss, spec, context.node, context)),
      component_(*registry.find(Kind::Loss, spec.at("plugin").get<std::string>())),
      key_(resolved(spec, context).dump()) {}

nlohmann::json ScheduledLoss::resolved(const nlohmann::json& spec, const StageContext& context) const {
  return component_.info.schema.resolve(spec.value("params", nlohmann::json::object()), context.epoch, context.epochs);
}

void ScheduledLoss::at_epoch(const nlohmann::json& spec, const StageContext& context) {
  const nlohmann::json params = resolved(spec, context);
  std::string key = params.dump();
  if (key == key_) return;
  configure_component(*loss_, component_, params, context.node, context);
  key_ = std::move(key);
}

}  // namespace yoloflow::core
