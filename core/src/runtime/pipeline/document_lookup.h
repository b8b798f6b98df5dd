#pragma once
// Finding parameters in a pipeline document before it is validated: the stages that have a
// parameter of a given name, the components a stage names in its parameters (a train sink's
// optimizer, scheduler, callbacks), the value at a dotted path. Both the overrides' closest-name
// suggestions (override_suggestions.h) and the shortcut words that stand for a parameter
// (runtime/words/) look names up this way, so that a word and its suggestion agree on where a
// name lives. Unknown plugins are left out: validation names them.
#include <string>
#include <utility>
#include <vector>

#include "runtime/plugin/registry.h"
#include "yoloflow/params.h"

namespace yoloflow::core {

// Whether component `rc`'s schema has parameter `param`.
bool has_param(const RegisteredComponent* rc, const std::string& param);

// The value at a dotted path below `root` ("callbacks.0": a list's index), null when absent.
json json_at(const json& root, const std::string& dotted);

// The components `stage` names in its Component and ComponentList parameters, each with its
// path below the stage's params ("scheduler", "callbacks.0"); a parameter the stage leaves out
// names its default's.
std::vector<std::pair<std::string, const RegisteredComponent*>> nested_components(const json& stage,
                                                                                  const RegisteredComponent& rc,
                                                                                  const Registry& registry);

// "scheduler.params.lrf" or "callbacks.0.params.patience": where `key` is a parameter of a
// component that `stage` names; "" when none is.
std::string nested_param_path(const json& stage, const RegisteredComponent& rc, const std::string& key,
                              const Registry& registry);

// The stages that have a parameter named `key`, with its spec, in the pipeline's order.
std::vector<std::pair<std::string, const ParamSpec*>> param_owners(const json& document, const Registry& registry,
                                                                   const std::string& key);

}  // namespace yoloflow::core
