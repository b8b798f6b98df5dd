#pragma once
// The `ema` callback: an exponential moving average of the weights (as Ultralytics' ModelEMA),
// written on the callback SDK's tensor hooks like any plugin could be: it updates the average
// after every optimizer step (on_optimizer_step), puts it into the model for each validation
// and takes it out again (on_validation_start/_end), and keeps it in checkpoints as the weights
// to deploy (the `ema` entry that `yoloflow val`, `predict` and `export` read) with its update
// count as its state.
#include <string>

#include "runtime/plugin/registry.h"

namespace yoloflow::core {

void register_ema_callback(Registry& registry);

// The train stage's `callbacks` list with an `ema` entry appended when `ema` (its `ema`
// parameter) is true and the list has none. Throws InvalidInput, naming `ema_path` and the
// entry's path under `callbacks_path`, when `ema` is false and the list has one.
json callbacks_with_ema(const json& callbacks, bool ema, const std::string& callbacks_path, const std::string& ema_path);

}  // namespace yoloflow::core
