#pragma once
// Plugins in the plugins' own tests (plugins/<kind>/<name>/tests), loaded through the SDK's test
// harness (yoloflow/testing.h) as a third party's tests load theirs: each library a real shared
// object from the build's plugin folder, loaded once per process, components created by their
// factories and configured as a pipeline stage is (params checked against the schema, defaults
// filled in, reported under "stages.<node>.params"). No host header: these tests are compiled
// without core/src on the include path (tests/CMakeLists.txt).
#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <string>

#include "yoloflow/augmentation.h"
#include "yoloflow/component.h"
#include "yoloflow/params.h"
#include "yoloflow/plugin.h"
#include "yoloflow/source.h"
#include "yoloflow/testing.h"

namespace yoloflow::plugin_test {

// The plugin libraries a test has loaded, by library name (letterbox -> yoloflow_letterbox.so).
class PluginSet {
 public:
  // Loads <plugin_dir>/yoloflow_<library>.so (again: the same one); a refusal fails the test
  // with the harness's reason.
  testing::PluginLibrary& load(const std::string& library);
  // Component `name` of `kind` among the loaded libraries; null when none registers it.
  const ComponentInfo* find(Kind kind, const std::string& name) const;
  // The same, failing the test when no loaded library registers it.
  const ComponentInfo& component(Kind kind, const std::string& name) const;

 private:
  std::map<std::string, testing::PluginLibrary*> libraries_;
};

// One set per library for the whole test run, the library loaded.
PluginSet& plugins_with(const std::string& library);

// `params` checked against the schema of component `name` (a problem fails the test, naming
// it) and resolved with the schema's defaults, reported under `path` ("stages.source.params").
Params checked_params(const PluginSet& plugins, Kind kind, const std::string& name, const json& params,
                      const std::string& path);
Params checked_params(const ComponentInfo& component, const json& params, const std::string& path);

// Component `name` made by its factory, not configured (for tests that configure it themselves).
Component* create(const PluginSet& plugins, Kind kind, const std::string& name);

struct ComponentSetup {
  int imgsz = 640;
  std::string node = {};     // pipeline node name; "" = the component's name
  std::string library = {};  // plugin library; "" = the component's name
};

// Loads the library holding component `name` of `kind`, creates it and configures it as the
// pipeline node `setup.node`, params under "stages.<node>.params".
template <class T>
std::unique_ptr<T> make_component(PluginSet& plugins, Kind kind, const std::string& name, const json& params,
                                  const ComponentSetup& setup = {}) {
  plugins.load(setup.library.empty() ? name : setup.library);
  const std::string node = setup.node.empty() ? name : setup.node;
  const ComponentInfo& info = plugins.component(kind, name);
  const Params resolved = checked_params(info, params, "stages." + node + ".params");
  std::unique_ptr<T> c(static_cast<T*>(info.factory()));
  StageContext ctx;
  ctx.node = node;
  ctx.imgsz = setup.imgsz;
  c->configure(resolved, ctx);
  return c;
}

inline std::unique_ptr<Augmentation> make_augmentation(PluginSet& plugins, const std::string& name,
                                                       const json& params, int imgsz) {
  return make_component<Augmentation>(plugins, Kind::Augmentation, name, params, {imgsz});
}

}  // namespace yoloflow::plugin_test
