#pragma once
// The `train_batch_images` callback: Ultralytics' train_batch0..2.jpg, the run's first batches
// as the model receives them, boxes and class names drawn. Built into the host because it
// draws with the host's sample grid (the one `yoloflow preview` shows).
#include "runtime/plugin/registry.h"

namespace yoloflow::core {

void register_train_batch_images(Registry& registry);

}  // namespace yoloflow::core
