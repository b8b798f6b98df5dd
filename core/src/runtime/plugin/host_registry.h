#pragma once
// The registry of the running host, for built-in components that create nested components
// from their parameters (the train sink creates its model, optimizer and precision).
#include "runtime/plugin/registry.h"

namespace yoloflow::core {

// Set by PluginManager; throws yoloflow::Error when no host registry exists yet.
const Registry& host_registry();
void set_host_registry(const Registry* registry);

}  // namespace yoloflow::core
