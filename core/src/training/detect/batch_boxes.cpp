#include "training/detect/batch_boxes.h"

#include <algorithm>
#include <cstdint>

namespace yoloflow::core {

std::vector<std::vector<Box>> batch_label_boxes(const Batch& batch) {
  std::vector<std::vector<Box>> out(static_cast<std::size_t>(std::max<std::int64_t>(batch.size, 0)));
  if (!batch.has_target(targets::kBoxes)) return out;
  const TargetArray& boxes = batch.boxes();
  const auto w = static_cast<float>(batch.width), h = static_cast<float>(batch.height);
  const auto rows = std::min<std::int64_t>(boxes.rows(), static_cast<std::int64_t>(boxes.values.size() / 6));
  for (std::int64_t k = 0; k < rows; ++k) {
    const float* r = boxes.values.data() + k * 6;
    const auto i = static_cast<std::int64_t>(r[0]);
    if (i < 0 || i >= batch.size) continue;
    Box b;
    b.cls = static_cast<int>(r[1]);
    b.x1 = (r[2] - r[4] / 2) * w;
    b.y1 = (r[3] - r[5] / 2) * h;
    b.x2 = (r[2] + r[4] / 2) * w;
    b.y2 = (r[3] + r[5] / 2) * h;
    out[static_cast<std::size_t>(i)].push_back(b);
  }
  return out;
}

}  // namespace yoloflow::core
