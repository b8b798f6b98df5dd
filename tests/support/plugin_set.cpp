#include "support/plugin_set.h"

#include <exception>

#include "support/paths.h"

namespace yoloflow::plugin_test {

testing::PluginLibrary& PluginSet::load(const std::string& library) {
  auto& slot = libraries_[library];
  if (slot == nullptr) {
    const std::string path = test::plugin_dir() + "/yoloflow_" + library + ".so";
    try {
      // Never destroyed: the harness keeps libraries loaded for the whole process, and
      // components they made may outlive any test.
      slot = new testing::PluginLibrary(path);
    } catch (const std::exception& e) {
      libraries_.erase(library);
      FAIL(path << ": " << e.what());
    }
  }
  return *slot;
}

const ComponentInfo* PluginSet::find(Kind kind, const std::string& name) const {
  for (const auto& [library, lib] : libraries_) {
    for (const auto& c : lib->components()) {
      if (c.kind == kind && c.name == name) return &c;
    }
  }
  return nullptr;
}

const ComponentInfo& PluginSet::component(Kind kind, const std::string& name) const {
  const ComponentInfo* info = find(kind, name);
  REQUIRE_MESSAGE(info != nullptr, "no " << kind_name(kind) << " '" << name << "' registered");
  return *info;
}

PluginSet& plugins_with(const std::string& library) {
  static auto* sets = new std::map<std::string, PluginSet>();
  auto& set = (*sets)[library];
  set.load(library);
  return set;
}

Params checked_params(const PluginSet& plugins, Kind kind, const std::string& name, const json& params,
                      const std::string& path) {
  return checked_params(plugins.component(kind, name), params, path);
}

Params checked_params(const ComponentInfo& component, const json& params, const std::string& path) {
  Diagnostics problems;
  component.schema.validate(params, path, problems);
  REQUIRE_MESSAGE(problems.empty(), (problems.empty() ? std::string() : problems[0].path + ": " + problems[0].message));
  return Params(component.schema.resolve(params), path);
}

Component* create(const PluginSet& plugins, Kind kind, const std::string& name) {
  return plugins.component(kind, name).factory();
}

}  // namespace yoloflow::plugin_test
