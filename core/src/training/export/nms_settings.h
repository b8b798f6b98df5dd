#pragma once
// The NMS an exported graph may end with (`yoloflow export --nms`).
#include <cstdint>

namespace yoloflow::core {

struct NmsSettings {
  float conf = 0.25f;  // `yoloflow predict` / `yolo predict` defaults
  float iou = 0.7f;
  std::int64_t max_det = 300;
};

}  // namespace yoloflow::core
