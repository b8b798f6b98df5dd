#include "plugin/plugin_manager.h"
#include "train/train_sink.h"

namespace yoloflow::core {

// The host's own components. Kept few: everything that can be a plugin is one. The
// training engine is built in because it drives model, optimizer and precision plugins.
void register_builtin_components(Registry& registry) { register_train_sink(registry); }

}  // namespace yoloflow::core
