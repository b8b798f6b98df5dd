#pragma once
// The operations every stage needs to keep a sample's per-instance fields together: check,
// select, append, move by a pixel map, flip. OpenCV only. The fields and the contracts stages
// declare about them are in yoloflow/fields.h:
//
// a contract says, per component, which fields it gives (a source: what its samples can carry),
// keeps (an augmentation: what it moves with the pixels; a batcher: what it packs into targets)
// and needs (what it cannot work without: a loss's targets). The host checks the chain before a
// run (`yoloflow validate` names the stage that drops a needed field, with its JSON path),
// removes from each sample the fields the next augmentation does not keep before it runs (a
// stage never sees, and so never leaves behind unmoved, a field it does not handle) and checks
// every sample it gives back (instance_problem).
#include <cstdint>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "yoloflow/export.h"
#include "yoloflow/fields.h"
#include "yoloflow/sample.h"

namespace yoloflow {

// The fields a sample carries (boxes count even when there are none: an image without objects
// is a valid detection sample).
YOLOFLOW_SDK_API Fields fields_of(const Sample& s);

// Empty string when every optional field is empty or has one entry per box, every instance
// has the same number of keypoints and every mask is 8-bit at the image's size; else what is
// wrong ("5 polygons for 6 boxes").
YOLOFLOW_SDK_API std::string instance_problem(const Sample& s);

// Empties the fields not in `keep` (boxes are never removed).
YOLOFLOW_SDK_API void remove_fields(Sample& s, Fields keep);

// Keeps the instances whose flag is true, every field together.
YOLOFLOW_SDK_API void keep_instances(Sample& s, const std::vector<bool>& keep);

// Appends instance i of `from` to `to`, every field: a field one side has and the other lacks
// is filled with "none" for the instances that lack it (an empty polygon, keypoints with
// visibility 0, an empty mask), so a mosaic of images with and without polygons keeps both.
YOLOFLOW_SDK_API void append_instance(Sample& to, const Sample& from, std::size_t i);

// Ultralytics' polygon resampling: `n` points evenly spaced along the closed outline (the first
// point repeated at the end), every original vertex kept among them.
YOLOFLOW_SDK_API Polygon resample_polygon(const Polygon& polygon, int n);
// Every polygon of a sample resampled to the same count: 1000 points, or one more than the
// longest polygon when that has more (Ultralytics' rule for detection and segmentation data).
YOLOFLOW_SDK_API void resample_polygons(std::vector<Polygon>& polygons);

// The box Ultralytics takes from a moved polygon: the extent of its points strictly inside the
// width x height image (all points clipped to the image first when the outline passes three of
// its sides); an all-zero box when no point is inside.
YOLOFLOW_SDK_API Box polygon_box(const Polygon& polygon, double width, double height);

// The rectangle of least area around a polygon (an oriented box's corners): centre, sides and
// angle in radians, as cv::minAreaRect gives it.
struct OrientedBox {
  float cx = 0, cy = 0, w = 0, h = 0, angle = 0;
};
YOLOFLOW_SDK_API OrientedBox oriented_box(const Polygon& corners);

// Which instances survive a geometric change (Ultralytics' box_candidates): sides over
// `min_side` px, area over `min_area_ratio` of the box before the change scaled by `scale`,
// aspect ratio under `max_aspect`. Instances with a polygon use `min_area_ratio_polygon`
// (Ultralytics keeps small remains of outlined objects: 0.01 instead of 0.10).
struct InstanceFilter {
  double min_side = 2.0;
  double min_area_ratio = 0.1;
  double min_area_ratio_polygon = 0.01;
  double max_aspect = 100.0;
};
YOLOFLOW_SDK_API bool keep_box(const Box& before, const Box& after, double min_area_ratio,
                               const InstanceFilter& filter = {});

// A pixel map applied to a sample's annotations, the pixels having been moved with the same
// map: input pixel (x, y) -> output pixel M * (x, y, 1) (divided by the third coordinate when
// `projective`), into an output of `size`.
struct PixelMap {
  cv::Matx33d M = cv::Matx33d::eye();
  bool projective = false;
  cv::Size size;
  // The scale of the map, the reference of the filter's area ratio.
  double scale = 1.0;
  // Boxes of instances without a polygon are clipped here (default: the whole output).
  cv::Rect2d clip;
};

// Moves every instance field of `s` with `map`, as Ultralytics' RandomPerspective moves
// instances: a box with a polygon becomes polygon_box of the moved polygon (the polygon then
// clipped to that box), a box without one the extent of its four moved corners clipped to
// `map.clip`; keypoints moved (visibility 0 outside the output); masks warped (nearest);
// instances dropped by `filter` (when `filter` is given). The image is not touched.
YOLOFLOW_SDK_API void move_instances(Sample& s, const PixelMap& map, const InstanceFilter* filter);

// Scales and shifts every instance field, x -> x * sx + dx and y -> y * sy + dy (a resize, a
// letterbox, a tile placed on a canvas), boxes included and nothing recomputed or dropped, as
// Ultralytics' LetterBox moves instances; masks resized (nearest) and placed into an image of
// `size`.
YOLOFLOW_SDK_API void scale_instances(Sample& s, double sx, double sy, double dx, double dy, cv::Size size);

// Mirrors every instance field of an image `width` wide (left-right) or `height` high (up-down).
// A left-right flip of keypoints also reorders them by `flip_idx` (keypoint i becomes the old
// keypoint flip_idx[i]: the left eye takes the right eye's place); it throws yoloflow::Error when the sample has keypoints
// and `flip_idx` does not list each of them once.
YOLOFLOW_SDK_API void flip_instances_lr(Sample& s, float width, const std::vector<std::int64_t>& flip_idx);
YOLOFLOW_SDK_API void flip_instances_ud(Sample& s, float height);

}  // namespace yoloflow
