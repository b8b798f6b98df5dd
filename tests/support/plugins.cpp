#include "support/plugins.h"

#include <map>

#include "support/paths.h"
#include "support/plugin_set.h"

namespace yoloflow::test {

void load_plugin(core::PluginManager& pm, const std::string& library) {
  const auto report = pm.load(plugin_dir() + "/yoloflow_" + library + ".so");
  REQUIRE_MESSAGE(report.loaded, report.path << ": " << report.reason);
}

core::PluginManager& plugins_with(const std::string& library) {
  // Never destroyed: plugin libraries stay loaded until the process ends, as in the CLI.
  static auto* managers = new std::map<std::string, core::PluginManager>();
  auto& pm = (*managers)[library];
  load_plugin(pm, library);
  return pm;
}

Params checked_params(core::PluginManager& pm, Kind kind, const std::string& name, const json& params,
                      const std::string& path) {
  const auto* rc = pm.registry().find(kind, name);
  REQUIRE_MESSAGE(rc != nullptr, "no component '" << name << "' registered");
  return plugin_test::checked_params(rc->info, params, path);
}

}  // namespace yoloflow::test
