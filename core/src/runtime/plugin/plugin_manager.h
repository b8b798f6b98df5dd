#pragma once
// Finds, checks and loads plugin libraries, and owns the registries they fill.
#include <string>
#include <vector>

#include "runtime/plugin/registry.h"

namespace yoloflow::core {

// What happened to one library file.
struct PluginLoadReport {
  std::string path;
  bool loaded = false;
  std::string reason;  // one line when refused: what is wrong, expected vs found
  std::string name, version;
  std::vector<std::string> components;  // "augmentation:flip"
};

// What this host expects of a plugin; the defaults are this build's own values.
struct HostAbi {
  unsigned abi_version;
  std::string torch_version;
  int cxx11_abi;
  static HostAbi current();
};

class PluginManager {
 public:
  PluginManager();
  // Search folders, in order: the build's (or install's) plugin folder next to the
  // executable, each folder of $YOLOFLOW_PLUGIN_PATH, then those added here.
  static std::vector<std::string> default_search_dirs();
  void add_search_dir(const std::string& dir);
  const std::vector<std::string>& search_dirs() const { return dirs_; }

  // Loads every plugin library (*.so) in the search folders. Refusals do not throw: they
  // are reported and logged as warnings, and the rest still loads. Folders and entries that
  // cannot be examined (plugin_folder.h) are skipped with a warning.
  std::vector<PluginLoadReport> load_all();
  // Loads one library file; never throws.
  PluginLoadReport load(const std::string& path);

  const std::vector<PluginLoadReport>& reports() const { return reports_; }
  Registry& registry() { return registry_; }
  const Registry& registry() const { return registry_; }

  HostAbi expected = HostAbi::current();

 private:
  // Checks and loads one library, filling `report`'s name, version and components; returns why it
  // was refused (empty when it loaded).
  std::string load_library(const std::string& path, PluginLoadReport& report);

  std::vector<std::string> dirs_;
  std::vector<PluginLoadReport> reports_;
  Registry registry_;
};

// The host's own components (marked "<built-in>"): the runtime has none. A host that trains
// installs the training library's (training/builtin_components.h, use_builtin_components()) once
// at start; every PluginManager made after that registers them first.
using BuiltinRegistration = void (*)(Registry&);
void set_builtin_registration(BuiltinRegistration registration);

}  // namespace yoloflow::core
