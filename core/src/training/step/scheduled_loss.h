#pragma once
// The loss the train sink trains with, made from its {"plugin", "params"} spec through the
// host registry. Scheduled parameters (a gain that follows the epoch) are evaluated again at
// each epoch boundary, and the loss is configured again when they changed. key() names the
// values a captured step bakes into its kernels: a change asks for another graph.
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/plugin/registry.h"
#include "yoloflow/component.h"
#include "yoloflow/loss.h"

namespace yoloflow::core {

class ScheduledLoss {
 public:
  // `context`: the loss's own (its node is the JSON path of the train stage's `loss`).
  ScheduledLoss(const Registry& registry, const nlohmann::json& spec, const StageContext& context);

  Loss& loss() { return *loss_; }
  Loss* get() { return loss_.get(); }
  // At an epoch boundary (context.epoch is the new epoch).
  void at_epoch(const nlohmann::json& spec, const StageContext& context);
  const std::string& key() const { return key_; }

 private:
  nlohmann::json resolved(const nlohmann::json& spec, const StageContext& context) const;

  std::unique_ptr<Loss> loss_;  // made first: an unknown plugin is refused by name there; guarded
  const RegisteredComponent& component_;
  std::string key_;  // the parameters the loss was last configured with, as JSON text
};

}  // namespace yoloflow::core
