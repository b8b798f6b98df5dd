#pragma once
// What the train sink refuses in its parameters beyond its schema: a validation source to read,
// a validation transform and batcher the validation pipeline can drive, and `ema` agreeing with
// the `callbacks` list. configure() refuses these; pipeline validation runs the same checks
// (ParamsCheck, runtime/plugin/registry.h) so that `yoloflow validate` refuses them too, with the same
// messages.
#include <string>

#include "runtime/plugin/registry.h"

namespace yoloflow::core {

void check_train_params(const json& params, const std::string& path, const Registry& registry, Diagnostics& out);

}  // namespace yoloflow::core
