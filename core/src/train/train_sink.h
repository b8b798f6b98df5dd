#pragma once
// The `train` sink: the consumer stage of a training pipeline. Each batch the graph
// delivers is one micro-batch of a YOLO11 training step (forward under the precision
// strategy's autocast, loss, scaled backward; every `accumulate` micro-batches: unscale,
// clip, optimizer step, EMA). At each epoch end: validation on the EMA weights, results.csv,
// results.png, last.pt and best.pt.
#include "plugin/registry.h"

namespace yoloflow::core {

// Registers the built-in `train` sink (called by register_builtin_components).
void register_train_sink(Registry& registry);

}  // namespace yoloflow::core
