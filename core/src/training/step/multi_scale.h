#pragma once
// Multi-scale training as Ultralytics' trainer does it (`multi_scale`): every batch is resized on
// the train device to a random size around imgsz before the forward pass; the targets are
// normalised to the image, so they stay as they are. The size is drawn from (seed, iteration):
// every data-parallel rank and a resumed run draw the same one.
#include <algorithm>
#include <cstdint>

#include "yoloflow/rng.h"

namespace yoloflow::core {

// One past the largest size drawn before flooring to the stride: both functions below use it,
// so the size auto batch profiles is the largest training can draw.
inline std::int64_t multi_scale_end(int imgsz, double fraction, int stride) {
  return static_cast<std::int64_t>(imgsz * (1.0 + fraction)) + stride;
}

// A size in [(1 - fraction) * imgsz, (1 + fraction) * imgsz + stride), floored to a multiple of
// `stride` (the model's largest) and at least one stride; `imgsz` itself when fraction <= 0.
// fraction 0.5 is Ultralytics' multi_scale=True (0.5x to 1.5x).
inline int multi_scale_size(int imgsz, double fraction, int stride, std::uint64_t seed, std::int64_t iteration) {
  if (fraction <= 0.0) return imgsz;
  Rng rng(Rng::mix(Rng::mix(seed, 0x6d756c74695f7363ULL /* "multi_sc" */), static_cast<std::uint64_t>(iteration)));
  const auto lo = static_cast<std::int64_t>(imgsz * (1.0 - fraction));
  const std::int64_t hi = multi_scale_end(imgsz, fraction, stride);
  const std::int64_t drawn = rng.integer(lo, std::max(lo, hi - 1)) / stride * stride;
  return static_cast<int>(std::max<std::int64_t>(drawn, stride));
}

// The largest size multi_scale_size can draw (what auto batch profiles).
inline int largest_multi_scale_size(int imgsz, double fraction, int stride) {
  if (fraction <= 0.0) return imgsz;
  return static_cast<int>((multi_scale_end(imgsz, fraction, stride) - 1) / stride * stride);
}

}  // namespace yoloflow::core
