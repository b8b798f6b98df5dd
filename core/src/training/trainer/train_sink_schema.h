#pragma once
// The train sink's parameters: what `yoloflow describe train` prints, docs/plugins/train.md
// shows and a pipeline's `stages.<train>.params` is validated against.
#include "yoloflow/params.h"

namespace yoloflow::core {

Schema train_sink_schema();

}  // namespace yoloflow::core
