#include "support/plugins.h"

#include <map>

#include "support/paths.h"

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
  Diagnostics diags;
  rc->info.schema.validate(params, path, diags);
  REQUIRE_MESSAGE(diags.empty(), (diags.empty() ? std::string() : diags[0].message));
  return Params(rc->info.schema.resolve(params), path);
}

}  // namespace yoloflow::test
