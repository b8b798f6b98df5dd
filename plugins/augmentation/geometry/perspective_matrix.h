#pragma once
// Ultralytics' RandomPerspective matrix, shared by random_perspective (which warps its whole
// input) and mosaic_perspective (which warps each mosaic tile's visible part): the same
// parameters, the same random draws in the same order, the same box rule.
#include <opencv2/core.hpp>

#include "yoloflow/annotations.h"
#include "yoloflow/params.h"
#include "yoloflow/rng.h"
#include "yoloflow/sample.h"

namespace yoloflow::plugins {

struct PerspectiveRanges {
  double degrees = 0, translate = 0.1, scale = 0.5, shear = 0, perspective = 0;
};

// Adds degrees, translate, scale, shear and perspective with Ultralytics' defaults.
void add_perspective_params(Schema& s);
PerspectiveRanges read_perspective_params(const Params& p);

struct PerspectiveDraw {
  cv::Matx33d M;   // input pixel -> output pixel: T * S * R * P * C
  double s = 1.0;  // the drawn scale (the box filter's reference)
  bool projective = false;  // perspective terms are in play (divide by w)
  // No rotation, shear or perspective: M only scales and translates.
  bool scale_translate_only() const { return !projective && M(0, 1) == 0 && M(1, 0) == 0; }
};

// Draws M for an in_w x in_h input into an out_w x out_h output: perspective (x, y), angle,
// scale, shear (x, y), translation (x, y), in that order. C centres the input, so a 2*imgsz
// mosaic canvas lands centre-cropped (Ultralytics' mosaic border of -imgsz/2).
PerspectiveDraw draw_perspective(Rng& rng, const PerspectiveRanges& r, int in_w, int in_h, int out_w, int out_h);

// The map a draw applies, for move_instances (yoloflow/annotations.h): every instance moved with
// the pixels into an out_w x out_h output and filtered by Ultralytics' rule (sides > 2 px, area
// over 10% of the box scaled by `s` (1% for an instance with a polygon), aspect < 100).
PixelMap pixel_map(const PerspectiveDraw& d, int out_w, int out_h);

// The sample's Geometry after the warp: exact for scale + translation; with rotation, shear
// or perspective (no (ratio, pad) form) it records the scale and the centre's move.
void warp_geometry(Geometry& g, const PerspectiveDraw& d);

}  // namespace yoloflow::plugins
