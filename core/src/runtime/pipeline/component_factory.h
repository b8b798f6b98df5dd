#pragma once
// Creating configured components from validated specs. The graph runner uses it for its
// stages; a sink built into the host (the training engine) uses it for the components its
// Component-typed parameters name ({"plugin": "yolo11", "params": {...}}).
#include <memory>
#include <string>

#include "runtime/plugin/registry.h"
#include "yoloflow/component.h"
#include "yoloflow/params.h"

namespace yoloflow::core {

// Creates `plugin` of `kind`, resolves `params` with its schema at the context's epoch
// (defaults, schedules) and configures it. `path` names it in errors (a pipeline node or a
// JSON path). An exception from the plugin's constructor or configure() becomes a
// yoloflow::Error naming `path`, the component and its library; a yoloflow::Error keeps
// its exit code (a plugin reporting bad input still exits 2).
std::unique_ptr<Component> create_configured(const Registry& registry, Kind kind,
                                             const std::string& plugin, const json& params,
                                             const std::string& path, const StageContext& context);

// Configures an existing component, wrapping its exceptions the same way. `display` names
// it in messages ("stage 'augment'"); `path` when empty.
void configure_component(Component& component, const RegisteredComponent& rc, const json& resolved,
                         const std::string& path, const StageContext& context,
                         const std::string& display = "");

// From a spec {"plugin": NAME, "params": {...}} (a validated Component-typed parameter).
// T is the kind's interface (Model, Optimizer, ...), matching `kind`.
template <class T>
std::unique_ptr<T> create_component(const Registry& registry, Kind kind, const json& spec,
                                    const std::string& path, const StageContext& context) {
  const std::string plugin = spec.is_object() && spec.contains("plugin") && spec["plugin"].is_string()
                                 ? spec["plugin"].template get<std::string>()
                                 : std::string();
  const json params = spec.is_object() && spec.contains("params") ? spec["params"] : json::object();
  // Factories registered through Registrar::add_<kind> return the kind's interface upcast
  // to Component; static_cast reverses exactly that.
  return std::unique_ptr<T>(static_cast<T*>(
      create_configured(registry, kind, plugin, params, path, context).release()));
}

}  // namespace yoloflow::core
