#pragma once
// The `predict` sink: detects objects in the batches a pipeline delivers with a trained
// checkpoint (the Predictor `yoloflow predict` uses, one forward pass per batch) and writes
// what that command writes: annotated images, labels/<stem>.txt and predictions.json.
#include "runtime/plugin/registry.h"

namespace yoloflow::core {

// Registers the built-in `predict` sink (called by register_builtin_components).
void register_predict_sink(Registry& registry);

}  // namespace yoloflow::core
