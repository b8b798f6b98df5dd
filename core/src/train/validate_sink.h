#pragma once
// The `validate` sink: evaluates given weights on the batches a pipeline delivers
// (validate-only pipelines), with the same validation step the `train` sink runs each epoch,
// and writes P, R, mAP50, mAP50-95 (overall and per class) to a file in the run folder.
#include "plugin/registry.h"

namespace yoloflow::core {

// Registers the built-in `validate` sink (called by register_builtin_components).
void register_validate_sink(Registry& registry);

}  // namespace yoloflow::core
