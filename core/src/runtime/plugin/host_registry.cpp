#include "runtime/plugin/host_registry.h"

#include <atomic>

#include "yoloflow/error.h"

namespace yoloflow::core {
namespace {
std::atomic<const Registry*> g_registry{nullptr};
}

const Registry& host_registry() {
  const Registry* r = g_registry.load();
  if (!r) throw Error("internal: no plugin registry is active (create a PluginManager first)");
  return *r;
}

void set_host_registry(const Registry* registry) { g_registry.store(registry); }

}  // namespace yoloflow::core
