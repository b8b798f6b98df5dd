#pragma once
// Ultralytics' box_candidates: which boxes survive a geometric augmentation.
#include "yoloflow/sample.h"

namespace yoloflow::plugins {

struct BoxFilter {
  double min_side = 2.0;     // width and height must exceed this many pixels
  double min_area_ratio = 0.1;  // new area / (old area * scale^2) must exceed this
  double max_aspect = 100.0;    // max(w/h, h/w) must stay below this
};

// `before` is the box before the transform with its sides already multiplied by the
// transform's scale; `after` the transformed, clipped box.
bool keep_box(const Box& before, const Box& after, const BoxFilter& filter = {});

}  // namespace yoloflow::plugins
