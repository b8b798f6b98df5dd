#pragma once
// Instance masks from outlines, as Ultralytics 8.4.56 makes its segmentation targets: each
// polygon's points truncated to whole pixels and filled at the image's size (OpenCV fillPoly),
// then resized to 1/ratio (bilinear, 0/1 values kept by rounding); either one mask per instance,
// or one per image holding k + 1 where instance k is on top, larger instances drawn first so that
// smaller ones stay visible (overlap_mask).
//
// Only the window around each outline is filled and resized: bilinear resizing reads a few
// source pixels around each output pixel, and everything outside the outline is 0, so a window
// aligned to the ratio with a margin gives the same bytes as the whole image at a fraction of the
// work (batches of crowded images rasterise on the batcher's one thread; `yoloflow_bench_mask_raster`
// measures both). The direct rule is kept as instance_mask_reference, which the tests compare with.
#include <cstdint>
#include <vector>

#include <opencv2/core.hpp>

#include "yoloflow/sample.h"

namespace yoloflow::plugins {

// One instance's mask at 1/ratio: `mask` (8-bit 0/1) covers `window` of the
// (height / ratio) x (width / ratio) plane; zero outside it. An empty window: an empty mask.
struct WindowedMask {
  cv::Rect window;
  cv::Mat mask;
};
WindowedMask instance_mask(const Polygon& polygon, int height, int width, int ratio);

// The same mask over the whole (height / ratio) x (width / ratio) plane, made by the direct rule
// (filled at the image's size, then resized): what instance_mask must equal.
cv::Mat instance_mask_reference(const Polygon& polygon, int height, int width, int ratio);

// The two layouts for a sample's `instances` instances (its boxes); polygons[i] is instance i's
// outline, and an instance without one (past the end of `polygons`, as a sample without outlines
// has, or empty: a box line) gets an empty mask. `height` and `width` are multiples of `ratio`.
// Writes the instances' masks, one (height / ratio) x (width / ratio) plane each, as 0/1 floats,
// into `out` (instances planes, zero on entry).
void write_instance_masks(const std::vector<Polygon>& polygons, std::size_t instances, int height, int width,
                          int ratio, float* out);

// Writes one (height / ratio) x (width / ratio) plane into `out` (zero on entry): k + 1 where
// instance k is on top, 0 elsewhere.
void write_overlap_mask(const std::vector<Polygon>& polygons, std::size_t instances, int height, int width, int ratio,
                        float* out);

// The same, appended to `out`.
void append_instance_masks(const std::vector<Polygon>& polygons, std::size_t instances, int height, int width,
                           int ratio, std::vector<float>& out);
void append_overlap_mask(const std::vector<Polygon>& polygons, std::size_t instances, int height, int width, int ratio,
                         std::vector<float>& out);

}  // namespace yoloflow::plugins
