#pragma once
// The shape of a YOLO-style anchor-free detection head: what a model reports (model.h) and a
// loss is set up for (loss.h). Plain data, no LibTorch.
#include <cstdint>
#include <vector>

namespace yoloflow {

struct DetectionHead {
  int nc = 80;                        // classes
  int reg_max = 16;                   // DFL bins per box side
  std::vector<std::int64_t> strides;  // per output level, e.g. {8, 16, 32}
};

}  // namespace yoloflow
