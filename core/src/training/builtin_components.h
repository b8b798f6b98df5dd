#pragma once
// The training library's own components: the train, validate and predict sinks and the
// train_batch_images and ema callbacks.
#include "runtime/plugin/registry.h"

namespace yoloflow::core {

void register_builtin_components(Registry& registry);

// Makes every PluginManager created from now on register them (set_builtin_registration):
// called once by each program that trains, validates or predicts (the CLI, the tests, the
// benchmarks), before its first PluginManager.
void use_builtin_components();

}  // namespace yoloflow::core
