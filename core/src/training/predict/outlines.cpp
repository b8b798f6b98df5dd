#include "training/predict/outlines.h"

#include <limits>

namespace yoloflow::core {

std::vector<cv::Point2f> joined_polygon(const Outlines& outlines) {
  std::vector<cv::Point2f> out;
  for (const auto& part : outlines) {
    if (part.empty()) continue;
    if (out.empty()) {
      out = part;
      continue;
    }
    // The pair of points nearest each other: the polygon so far at i, this part at j.
    std::size_t bi = 0, bj = 0;
    double best = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < out.size(); ++i) {
      for (std::size_t j = 0; j < part.size(); ++j) {
        const double dx = out[i].x - part[j].x, dy = out[i].y - part[j].y, d = dx * dx + dy * dy;
        if (d < best) {
          best = d;
          bi = i;
          bj = j;
        }
      }
    }
    // ... out[bi], part[bj], part[bj + 1], ..., part[bj] again, out[bi] again, out[bi + 1] ...
    std::vector<cv::Point2f> joined(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(bi) + 1);
    for (std::size_t k = 0; k <= part.size(); ++k) joined.push_back(part[(bj + k) % part.size()]);
    joined.insert(joined.end(), out.begin() + static_cast<std::ptrdiff_t>(bi), out.end());
    out = std::move(joined);
  }
  return out;
}

}  // namespace yoloflow::core
