#pragma once
// Plugins in tests: each library is loaded as a real shared object from the build's plugin
// folder, and components are created and configured the way a pipeline stage is (params
// checked against the component's schema, defaults filled in), so plugin tests go through
// the same loader and schema path as `yoloflow run`.
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "runtime/plugin/plugin_manager.h"

namespace yoloflow::test {

// Loads <plugin_dir>/yoloflow_<library>.so into `pm` (again is a no-op); a refusal fails the
// test with the loader's reason.
void load_plugin(core::PluginManager& pm, const std::string& library);

// One manager per library for the whole test run, the library loaded.
core::PluginManager& plugins_with(const std::string& library);

// `params` checked against the schema of component `name` (a problem fails the test, naming
// it) and resolved with the schema's defaults, reported under `path` ("stages.source.params").
Params checked_params(core::PluginManager& pm, Kind kind, const std::string& name, const json& params,
                      const std::string& path);

struct ComponentSetup {
  int imgsz = 640;
  std::string node;     // pipeline node name; "" = the component's name
  std::string library;  // plugin library; "" = the component's name (letterbox -> yoloflow_letterbox.so)
};

// Loads the library holding component `name` of `kind`, creates it and configures it as the
// pipeline node `setup.node` with params path "stages.<node>.params".
template <class T>
std::unique_ptr<T> make_component(core::PluginManager& pm, Kind kind, const std::string& name, const json& params,
                                  const ComponentSetup& setup = {}) {
  load_plugin(pm, setup.library.empty() ? name : setup.library);
  const std::string node = setup.node.empty() ? name : setup.node;
  const Params resolved = checked_params(pm, kind, name, params, "stages." + node + ".params");
  auto c = pm.registry().create_as<T>(kind, name, node);
  StageContext ctx;
  ctx.node = node;
  ctx.imgsz = setup.imgsz;
  c->configure(resolved, ctx);
  return c;
}

}  // namespace yoloflow::test
