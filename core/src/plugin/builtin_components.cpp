#include "plugin/plugin_manager.h"

namespace yoloflow::core {

// The host's own components. Kept few: everything that can be a plugin is one.
void register_builtin_components(Registry& registry) { (void)registry; }

}  // namespace yoloflow::core
