#include "runtime/plugin/registry.h"

#include "yoloflow/error.h"

namespace yoloflow::core {

void Registry::check_new(const ComponentInfo& info, const std::string& file) const {
  if (info.name.empty()) throw Error("a component of kind " + std::string(kind_name(info.kind)) +
                                     " in " + file + " has an empty name");
  if (!info.factory && file != kBuiltinFile) {
    throw Error(std::string(kind_name(info.kind)) + " '" + info.name + "' in " + file + " has no factory");
  }
  auto it = components_.find({static_cast<int>(info.kind), info.name});
  if (it != components_.end()) {
    throw Error("duplicate " + std::string(kind_name(info.kind)) + " '" + info.name +
                "': registered by " + it->second.file + " and again by " + file);
  }
}

void Registry::add(ComponentInfo info, const std::string& file, const std::string& plugin,
                   const std::string& plugin_version, BuiltinTraits traits) {
  check_new(info, file);
  if (!info.factory && !traits.driver) {
    throw Error(std::string(kind_name(info.kind)) + " '" + info.name + "' has neither a factory nor a driver");
  }
  const auto key = std::make_pair(static_cast<int>(info.kind), info.name);
  components_.emplace(key, RegisteredComponent{std::move(info), file, plugin, plugin_version, traits.check, traits.driver,
                                               traits.writes_run_folder, traits.prepare});
}

const RegisteredComponent* Registry::find(Kind kind, const std::string& name) const {
  auto it = components_.find({static_cast<int>(kind), name});
  return it == components_.end() ? nullptr : &it->second;
}

const RegisteredComponent* Registry::find_any_kind(const std::string& name) const {
  for (const auto& [key, rc] : components_) {
    if (key.second == name) return &rc;
  }
  return nullptr;
}

std::vector<std::string> Registry::names(Kind kind) const {
  std::vector<std::string> out;
  for (const auto& [key, rc] : components_) {
    if (key.first == static_cast<int>(kind)) out.push_back(key.second);
  }
  return out;
}

std::vector<const RegisteredComponent*> Registry::all() const {
  std::vector<const RegisteredComponent*> out;
  for (const auto& [key, rc] : components_) out.push_back(&rc);
  return out;
}

std::unique_ptr<Component> Registry::create(Kind kind, const std::string& name,
                                            const std::string& where) const {
  const RegisteredComponent* rc = find(kind, name);
  if (!rc) {
    throw Error(where + ": no " + std::string(kind_name(kind)) + " plugin named '" + name + "'",
                kExitInvalid);
  }
  if (!rc->info.factory) {
    throw Error(where + ": " + kind_name(kind) + " '" + name + "' runs the pipeline it ends; it is not made as a component");
  }
  try {
    std::unique_ptr<Component> c(rc->info.factory());
    if (!c) throw Error("the factory returned null");
    return c;
  } catch (const std::exception& e) {
    throw Error(where + ": " + kind_name(kind) + " '" + name + "' (" + rc->file +
                ") failed to construct: " + e.what());
  } catch (...) {
    throw Error(where + ": " + kind_name(kind) + " '" + name + "' (" + rc->file +
                ") failed to construct: unknown exception");
  }
}

}  // namespace yoloflow::core
