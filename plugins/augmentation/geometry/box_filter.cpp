#include "geometry/box_filter.h"

#include <algorithm>

namespace yoloflow::plugins {

bool keep_box(const Box& before, const Box& after, const BoxFilter& f) {
  constexpr double eps = 1e-16;
  const double w1 = before.width(), h1 = before.height();
  const double w2 = after.width(), h2 = after.height();
  const double aspect = std::max(w2 / (h2 + eps), h2 / (w2 + eps));
  return w2 > f.min_side && h2 > f.min_side && w2 * h2 / (w1 * h1 + eps) > f.min_area_ratio &&
         aspect < f.max_aspect;
}

}  // namespace yoloflow::plugins
