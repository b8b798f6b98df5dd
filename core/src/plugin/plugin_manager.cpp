#include "plugin/plugin_manager.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>

#define BOOST_DLL_USE_STD_FS
#include <boost/dll/library_info.hpp>
#include <boost/core/demangle.hpp>
#include <boost/dll/shared_library.hpp>

#include "plugin/host_registry.h"
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

// Why a plugin with this descriptor cannot run in this host, with both versions; empty when it can.
std::string descriptor_mismatch(const yoloflow_plugin_descriptor_t& d, const HostAbi& expected) {
  if (d.abi_version != expected.abi_version) {
    return "SDK ABI version mismatch: host expects " + std::to_string(expected.abi_version) +
           ", plugin was built with " + std::to_string(d.abi_version) + "; rebuild the plugin against this SDK";
  }
  if (d.descriptor_size != sizeof(yoloflow_plugin_descriptor_t)) {
    return "descriptor size mismatch: host expects " + std::to_string(sizeof(yoloflow_plugin_descriptor_t)) +
           " bytes, plugin has " + std::to_string(d.descriptor_size);
  }
  const std::string torch = d.torch_version ? d.torch_version : "";
  if (torch != "none" && torch != expected.torch_version) {
    return "LibTorch version mismatch: host uses " + expected.torch_version + ", plugin was built with " + torch +
           "; rebuild the plugin against LibTorch " + expected.torch_version;
  }
  if (d.cxx11_abi != -1 && expected.cxx11_abi != -1 && d.cxx11_abi != expected.cxx11_abi) {
    return "C++ ABI mismatch: host uses _GLIBCXX_USE_CXX11_ABI=" + std::to_string(expected.cxx11_abi) +
           ", plugin was built with " + std::to_string(d.cxx11_abi);
  }
  return {};
}

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
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      YF_LOG_WARN("plugin folder " << dir << " does not exist; skipped");
      continue;
    }
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (entry.is_regular_file() && entry.path().extension() == ".so") {
        files.push_back(entry.path().string());
      }
    }
    std::sort(files.begin(), files.end());  // load order, hence duplicate reports, is stable
    for (const auto& f : files) out.push_back(load(f));
  }
  return out;
}

PluginLoadReport PluginManager::load(const std::string& path) {
  std::lock_guard<std::mutex> lock(load_mutex());
  PluginLoadReport report;
  report.path = path;
  auto refuse = [&](const std::string& reason) {
    report.loaded = false;
    report.reason = reason;
    YF_LOG_WARN("plugin " << path << " refused: " << reason);
    reports_.push_back(report);
    return report;
  };
  for (const auto& r : reports_) {
    if (r.path == path) return r;  // already handled (a folder listed twice)
  }

  // A shared library at all? Its first bytes say so; the ELF reader below would answer a text
  // or truncated file with an iostream error.
  {
    std::ifstream f(path, std::ios::binary);
    char magic[4] = {0, 0, 0, 0};
    f.read(magic, 4);
    if (!f || magic[0] != 0x7f || magic[1] != 'E' || magic[2] != 'L' || magic[3] != 'F') {
      std::error_code ec;
      const auto size = fs::file_size(path, ec);
      return refuse("not a shared library: the file (" + (ec ? std::string("unreadable") : std::to_string(size) + " bytes") +
                    ") does not start with the ELF header of a compiled library");
    }
  }
  // Look for the descriptor in the symbol table before running any of the library's code.
  try {
    boost::dll::library_info info(fs::path(path), false);
    auto symbols = info.symbols();
    if (std::find(symbols.begin(), symbols.end(), YOLOFLOW_DESCRIPTOR_SYMBOL) == symbols.end()) {
      return refuse(std::string("not a yoloflow plugin: it exports no '") +
                    YOLOFLOW_DESCRIPTOR_SYMBOL + "' symbol (define one with YOLOFLOW_PLUGIN)");
    }
  } catch (const std::exception& e) {
    return refuse(std::string("not a shared library this host can read: ") + e.what());
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
      const auto* d = lazy.get<const yoloflow_plugin_descriptor_t*()>(YOLOFLOW_DESCRIPTOR_SYMBOL)();
      if (d != nullptr) {
        const auto mismatch = descriptor_mismatch(*d, expected);
        if (!mismatch.empty()) return refuse(mismatch);
      }
    } catch (const std::exception&) {
      // Not readable lazily either: the missing symbol is all there is to say.
    }
    return refuse(missing);
  }
  loaded_libraries().push_back(lib);  // never unloaded, see loaded_libraries()

  const yoloflow_plugin_descriptor_t* d = nullptr;
  try {
    auto fn = lib.get<const yoloflow_plugin_descriptor_t*()>(YOLOFLOW_DESCRIPTOR_SYMBOL);
    d = fn();
  } catch (const std::exception& e) {
    return refuse(std::string("its descriptor function failed: ") + e.what());
  }
  if (d == nullptr) return refuse("its descriptor function returned null");
  const auto mismatch = descriptor_mismatch(*d, expected);
  if (!mismatch.empty()) return refuse(mismatch);
  report.name = d->name ? d->name : "";
  report.version = d->version ? d->version : "";
  if (d->register_components == nullptr) return refuse("its descriptor has no register function");

  CollectingRegistrar collected;
  try {
    d->register_components(collected);
  } catch (const std::exception& e) {
    return refuse(std::string("its register function threw: ") + e.what());
  } catch (...) {
    return refuse("its register function threw an unknown exception");
  }
  if (collected.infos.empty()) return refuse("it registered no components");
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
    return refuse(e.what());
  }
  for (auto& info : collected.infos) {
    report.components.push_back(std::string(kind_name(info.kind)) + ":" + info.name);
    registry_.add(std::move(info), path, report.name, report.version);
  }
  report.loaded = true;
  YF_LOG_DEBUG("plugin " << report.name << " " << report.version << " loaded from " << path);
  reports_.push_back(report);
  return report;
}

}  // namespace yoloflow::core
