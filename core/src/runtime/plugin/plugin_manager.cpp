#include "runtime/plugin/plugin_manager.h"

#include <dlfcn.h>
#include <elf.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>

#define BOOST_DLL_USE_STD_FS
#include <boost/core/demangle.hpp>
#include <boost/dll/shared_library.hpp>

#include "runtime/plugin/descriptor_check.h"
#include "runtime/plugin/elf_library.h"
#include "runtime/plugin/host_registry.h"
#include "runtime/plugin/library_mapping.h"
#include "runtime/plugin/plugin_folder.h"
#include "runtime/plugin/schema_defaults.h"
#include "yoloflow/error.h"
#include "yoloflow/log.h"
#include "yoloflow/version.h"

namespace fs = std::filesystem;

namespace yoloflow::core {
namespace {

// Every library ever opened stays loaded until the process exits. Objects, vtables,
// std::function targets and exception type information created by a plugin live in its
// code; unloading it while any of them survives crashes (Boost.DLL, "Missuses"). The
// handles are leaked on purpose: no destructor runs at exit either.
std::vector<boost::dll::shared_library>& loaded_libraries() {
  static auto* libs = new std::vector<boost::dll::shared_library>();
  return *libs;
}
std::mutex& load_mutex() {
  static auto* m = new std::mutex();
  return *m;
}

// Collects a plugin's registrations, so a library registers all of its components or none.
class CollectingRegistrar final : public Registrar {
 public:
  void add(ComponentInfo info) override { infos.push_back(std::move(info)); }
  std::vector<ComponentInfo> infos;
};

std::string executable_dir() {
  std::error_code ec;
  auto exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

}  // namespace

HostAbi HostAbi::current() {
#if defined(_GLIBCXX_USE_CXX11_ABI)
  const int abi = _GLIBCXX_USE_CXX11_ABI;
#else
  const int abi = -1;
#endif
  return HostAbi{YOLOFLOW_SDK_ABI_VERSION, YOLOFLOW_HOST_TORCH_VERSION, abi};
}

namespace {

// The dynamic loader's own words, without Boost's wrapping ("load() failed (dlerror system
// message: ...): Bad file descriptor"); an undefined symbol is named in C++ terms as well.
std::string load_failure(const std::string& what) {
  std::string text = what;
  const std::string dl = "dlerror system message: ";
  if (const auto at = text.find(dl); at != std::string::npos) {
    text = text.substr(at + dl.size());
    if (const auto close = text.rfind("): "); close != std::string::npos) text = text.substr(0, close);
  }
  const std::string undefined = "undefined symbol: ";
  if (const auto at = text.find(undefined); at != std::string::npos) {
    const std::string symbol = text.substr(at + undefined.size());
    const std::string readable = boost::core::demangle(symbol.c_str());
    return "undefined symbol " + symbol + (readable != symbol ? " (" + readable + ")" : "") +
           ": it was built against libraries or headers other than this host's";
  }
  return text;
}

// The descriptor of the library `handle` names, every pointer checked against that library's
// memory before it is called or read (descriptor_check.h).
CheckedDescriptor read_descriptor(void* handle, const HostAbi& expected) {
  CheckedDescriptor out;
  const auto mapping = LibraryMapping::of_loaded(handle);
  if (!mapping) {
    out.problem = "the dynamic loader does not list the library it loaded, so its descriptor cannot be checked";
    return out;
  }
  void* symbol = ::dlsym(handle, YOLOFLOW_DESCRIPTOR_SYMBOL);
  if (symbol == nullptr || !mapping->executable(symbol)) {
    out.problem = std::string("its '") + YOLOFLOW_DESCRIPTOR_SYMBOL + "' symbol (" + pointer_text(symbol) +
                  ") is not in the library's code; define the descriptor with YOLOFLOW_PLUGIN";
    return out;
  }
  const yoloflow_plugin_descriptor_t* d = nullptr;
  try {
    d = reinterpret_cast<yoloflow_plugin_descriptor_fn>(symbol)();
  } catch (const std::exception& e) {
    out.problem = std::string("its descriptor function failed: ") + e.what();
    return out;
  } catch (...) {
    out.problem = "its descriptor function failed: unknown exception";
    return out;
  }
  return check_descriptor(d, *mapping, expected);
}

std::atomic<BuiltinRegistration> g_builtin_registration{nullptr};

}  // namespace

void set_builtin_registration(BuiltinRegistration registration) { g_builtin_registration = registration; }

PluginManager::PluginManager() {
  for (const auto& d : default_search_dirs()) add_search_dir(d);
  if (const auto registration = g_builtin_registration.load()) registration(registry_);
  set_host_registry(&registry_);  // the newest manager is the host's
}

std::vector<std::string> PluginManager::default_search_dirs() {
  std::vector<std::string> dirs;
  const auto exe_dir = executable_dir();
  if (!exe_dir.empty()) {
    // build/bin/yoloflow -> build/plugins; <prefix>/bin -> <prefix>/lib/yoloflow/plugins
    for (const char* rel : {"../plugins", "../lib/yoloflow/plugins"}) {
      std::error_code ec;
      auto p = fs::weakly_canonical(fs::path(exe_dir) / rel, ec);
      if (!ec && fs::is_directory(p, ec)) dirs.push_back(p.string());
    }
  }
  if (const char* env = std::getenv("YOLOFLOW_PLUGIN_PATH")) {
    std::stringstream ss(env);
    std::string item;
    while (std::getline(ss, item, ':')) {
      if (!item.empty()) dirs.push_back(item);
    }
  }
  return dirs;
}

void PluginManager::add_search_dir(const std::string& dir) {
  if (std::find(dirs_.begin(), dirs_.end(), dir) == dirs_.end()) dirs_.push_back(dir);
}

std::vector<PluginLoadReport> PluginManager::load_all() {
  std::vector<PluginLoadReport> out;
  for (const auto& dir : dirs_) {
    for (const auto& file : plugin_libraries_in(dir)) out.push_back(load(file));
  }
  return out;
}

PluginLoadReport PluginManager::load(const std::string& path) {
  std::lock_guard<std::mutex> lock(load_mutex());
  for (const auto& r : reports_) {
    if (r.path == path) return r;  // already handled (a folder listed twice)
  }
  PluginLoadReport report;
  report.path = path;
  std::string reason;
  try {
    reason = load_library(path, report);
  } catch (const std::bad_alloc&) {  // a huge damaged table, say: still one line
    reason = "cannot be loaded: out of memory while reading it";
  } catch (const std::exception& e) {
    reason = std::string("cannot be loaded: ") + e.what();
  }
  report.loaded = reason.empty();
  if (report.loaded) {
    YF_LOG_DEBUG("plugin " << report.name << " " << report.version << " loaded from " << path);
  } else {
    report.reason = reason;
    report.components.clear();
    YF_LOG_WARN("plugin " << path << " refused: " << reason);
  }
  reports_.push_back(report);
  return report;
}

std::string PluginManager::load_library(const std::string& path, PluginLoadReport& report) {
  // The file itself, before the dynamic loader maps it or any of its code runs: a 64-bit
  // shared library for this processor, whole, exporting the descriptor as a function.
  const ElfReadResult elf = read_elf_library(path);
  if (!elf.ok) return elf.problem;
  const ElfSymbol* symbol = elf.library.find_defined(YOLOFLOW_DESCRIPTOR_SYMBOL);
  if (symbol == nullptr) {
    return std::string("not a yoloflow plugin: it exports no '") + YOLOFLOW_DESCRIPTOR_SYMBOL +
           "' symbol (define one with YOLOFLOW_PLUGIN)";
  }
  if (symbol->type != STT_FUNC && symbol->type != STT_GNU_IFUNC) {
    return std::string("not a yoloflow plugin: its '") + YOLOFLOW_DESCRIPTOR_SYMBOL + "' symbol is " +
           elf_symbol_type_text(symbol->type) + ", not a function (define the descriptor with YOLOFLOW_PLUGIN)";
  }

  // Every symbol is bound at load, so that a missing one is refused here, naming it, rather
  // than ending the process when the plugin first calls it.
  boost::dll::shared_library lib;
  try {
    lib.load(fs::path(path), boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    // Typically "undefined symbol: ..." for a plugin built against other libraries. A plugin
    // built for another ABI usually lacks host symbols too: opened again with lazy binding
    // (functions bound only when first called), its descriptor function can still run and say
    // why, which is the better message.
    const std::string missing = "cannot be loaded: " + load_failure(e.what());
    try {
      boost::dll::shared_library lazy(fs::path(path), boost::dll::load_mode::rtld_lazy | boost::dll::load_mode::rtld_local);
      loaded_libraries().push_back(lazy);  // never unloaded, see loaded_libraries()
      const CheckedDescriptor d = read_descriptor(lazy.native(), expected);
      if (!d.problem.empty()) return d.problem;
    } catch (const std::exception&) {
      // Not readable lazily either: the missing symbol is all there is to say.
    }
    return missing;
  }
  loaded_libraries().push_back(lib);  // never unloaded, see loaded_libraries()

  const CheckedDescriptor d = read_descriptor(lib.native(), expected);
  if (!d.problem.empty()) return d.problem;
  report.name = d.name;
  report.version = d.version;

  CollectingRegistrar collected;
  try {
    d.register_components(collected);
  } catch (const std::exception& e) {
    return std::string("its register function threw: ") + e.what();
  } catch (...) {
    return "its register function threw an unknown exception";
  }
  if (collected.infos.empty()) return "it registered no components";
  try {
    for (const auto& info : collected.infos) registry_.check_new(info, path);
    // Duplicates within the library itself.
    for (std::size_t i = 0; i < collected.infos.size(); ++i) {
      for (std::size_t j = i + 1; j < collected.infos.size(); ++j) {
        if (collected.infos[i].kind == collected.infos[j].kind &&
            collected.infos[i].name == collected.infos[j].name) {
          throw Error("duplicate " + std::string(kind_name(collected.infos[i].kind)) + " '" +
                      collected.infos[i].name + "': registered twice by " + path);
        }
      }
    }
  } catch (const std::exception& e) {
    return e.what();
  }
  // Defaults the component's own schema refuses would pass every check until the run's
  // resolved pipeline.json is read again (schema_defaults.h).
  std::vector<std::string> bad_defaults;
  for (const auto& info : collected.infos) {
    for (auto& problem : default_problems(info)) bad_defaults.push_back(std::move(problem));
  }
  if (!bad_defaults.empty()) {
    std::string reason = "plugin '" + report.name + "': " + bad_defaults.front();
    if (bad_defaults.size() > 1) {
      reason += " (and " + std::to_string(bad_defaults.size() - 1) + " more default" +
                (bad_defaults.size() == 2 ? "" : "s") + " its schemas refuse)";
    }
    return reason;
  }
  for (auto& info : collected.infos) {
    report.components.push_back(std::string(kind_name(info.kind)) + ":" + info.name);
    registry_.add(std::move(info), path, report.name, report.version);
  }
  return {};
}

}  // namespace yoloflow::core
