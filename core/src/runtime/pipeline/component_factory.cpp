#include "runtime/pipeline/component_factory.h"

#include "runtime/pipeline/component_origin.h"
#include "runtime/pipeline/component_spec.h"
#include "yoloflow/error.h"

namespace yoloflow::core {

void configure_component(Component& component, const RegisteredComponent& rc, const json& resolved,
                         const std::string& path, const StageContext& context,
                         const std::string& display) {
  const std::string who = component_origin(rc, display.empty() ? path : display).text();
  try {
    component.configure(Params(resolved, path + ".params"), context);
  } catch (const Error& e) {
    throw Error(who + " failed to configure: " + e.what(), e.exit_code());
  } catch (const std::exception& e) {
    throw Error(who + " failed to configure: " + e.what());
  } catch (...) {
    throw Error(who + " failed to configure: unknown exception");
  }
}

std::unique_ptr<Component> create_configured(const Registry& registry, Kind kind,
                                             const std::string& plugin, const json& params,
                                             const std::string& path, const StageContext& context) {
  const RegisteredComponent* rc = registry.find(kind, plugin);
  if (!rc) {
    Diagnostics d;
    find_component_of_kind(registry, kind, plugin, path, d);
    throw InvalidInput(path + ": " + (d.empty() ? "unknown plugin '" + plugin + "'" : d[0].message));
  }
  Diagnostics problems;
  rc->info.schema.validate(params, path + ".params", problems, nullptr,
                           component_label(kind, plugin));
  if (!problems.empty()) {
    std::string msg = "invalid parameters:";
    for (const auto& p : problems) msg += "\n  " + p.path + ": " + p.message;
    throw InvalidInput(msg);
  }
  auto component = registry.create(kind, plugin, path);
  configure_component(*component, *rc,
                      rc->info.schema.resolve(params, context.epoch, context.epochs), path, context);
  return component;
}

}  // namespace yoloflow::core
