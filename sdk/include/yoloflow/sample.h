#pragma once
// What flows on graph edges: a Sample (one image and its annotations) and a Batch (images and
// named target arrays). OpenCV only; no LibTorch here, so data plugins compile quickly.
//
// Annotations are per instance, one task-neutral set for every YOLO task (detect, segment, pose,
// oriented boxes, classify): every instance has a class and an axis-aligned box; any instance may
// also have a polygon, keypoints and a mask. Each optional field is either empty (no instance of
// the sample has it) or holds exactly one entry per box, in the same order, so selecting or
// moving instances moves every field together (yoloflow/annotations.h does both). An oriented
// box is its four corners, a polygon of 4 points, so every geometric stage moves it exactly; its
// angle is derived where needed (oriented_box() in yoloflow/annotations.h).
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "yoloflow/export.h"

namespace yoloflow {

struct PixelPlan;      // yoloflow/pixel_plan.h
struct PlannedPixels;  // yoloflow/pixel_plan.h

// One labelled box in pixel coordinates of the image it belongs to.
struct Box {
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;
  int cls = 0;
  float width() const { return x2 - x1; }
  float height() const { return y2 - y1; }
};

// An instance outline in pixel coordinates of the sample's image (not closed: the last point
// joins the first). An empty polygon: that instance has none.
using Polygon = std::vector<cv::Point2f>;

// One keypoint in pixel coordinates; `visible` as in YOLO pose labels (0 absent or outside the
// image, 1 occluded, 2 visible; 2 for labels that give no visibility).
struct Keypoint {
  float x = 0, y = 0, visible = 0;
};

// How the pixels of a sample relate to the original file: original = (current - pad) / ratio.
// Letterbox and resize update it; predictions are mapped back with it.
struct Geometry {
  int original_width = 0, original_height = 0;
  double ratio_x = 1.0, ratio_y = 1.0;
  double pad_x = 0.0, pad_y = 0.0;
};

struct Sample {
  std::size_t index = 0;   // position in the source
  std::string path;        // image file
  cv::Mat image;           // 8-bit BGR, HxWx3, continuous
  // Instances: class and box, pixel coordinates in `image`.
  std::vector<Box> boxes;
  // Optional per-instance fields: empty, or one entry per box.
  std::vector<Polygon> polygons;                // outlines (segment labels, oriented-box corners)
  std::vector<std::vector<Keypoint>> keypoints;  // K keypoints per instance, the same K for all
  std::vector<cv::Mat> masks;                   // 8-bit, the image's size, non-zero inside
  int image_class = -1;                         // the whole image's class (classification); -1: none
  Geometry geometry;
  std::uint64_t sequence = 0;  // position in this epoch's order (set by the host)
  // Set when the pixels are planned rather than made (AugmentContext::plan_pixels): `image` is
  // then empty and the plan says how the training device composes it (yoloflow/pixel_plan.h).
  std::shared_ptr<PixelPlan> pixel_plan;
};

// Per-sample information kept in a batch.
struct SampleInfo {
  std::size_t index = 0;
  std::string path;
  Geometry geometry;
  std::uint64_t sequence = 0;  // Sample::sequence: where a resumed epoch continues from
};

// One named target array of a batch: float values, row-major, with their shape. The first
// dimension counts rows: instances (boxes, keypoints) or images (image classes).
struct TargetArray {
  std::vector<std::int64_t> shape;
  std::vector<float> values;
  std::int64_t rows() const { return shape.empty() ? 0 : shape[0]; }
  // Values per row (the product of the other dimensions).
  YOLOFLOW_SDK_API std::int64_t row_size() const;
};

// The names and layouts of the target arrays a batcher writes (coordinates normalised to 0..1
// by the batch's width and height; instance rows in the same order in every array). An array
// whose name starts with "image_" has one row per image; every other array one row per
// instance, row i belonging to boxes row i (a loss receives both kinds padded alike: loss.h).
namespace targets {
// (N, 6) [batch_idx, cls, cx, cy, w, h]: every instance (Ultralytics' layout). Always present.
inline constexpr const char* kBoxes = "boxes";
// (N, K, 3) [x, y, visible]: the instances' keypoints, row i belonging to boxes row i.
inline constexpr const char* kKeypoints = "keypoints";
// (B,) each image's class, -1 where it has none.
inline constexpr const char* kImageClasses = "image_classes";
// True for the name of a per-image array ("image_" prefix), false for a per-instance one.
inline bool per_image(const std::string& name) { return name.rfind("image_", 0) == 0; }
}  // namespace targets

// A batch as training and evaluation consume it.
// Pixels: `size` images of height x width, RGB, uint8, stored NHWC (channels-last), so a
// tensor view with logical shape NCHW costs no copy and suits channels_last models.
// Targets: named arrays (`targets::kBoxes` and the others above, or a plugin's own names).
struct Batch {
  std::int64_t size = 0, height = 0, width = 0;
  std::shared_ptr<std::uint8_t> pixels;  // size*height*width*3 bytes; owner may be pinned memory
  // Instead of `pixels` (then empty), the samples' pixel plans with the bytes they read, for a
  // consumer that composes them (Sink::composes_pixel_plans; yoloflow/pixel_plan.h).
  std::shared_ptr<const PlannedPixels> planned;
  std::map<std::string, TargetArray> targets;
  std::vector<SampleInfo> samples;
  int epoch = 0;
  std::int64_t index = 0;  // batch number within the epoch
  // The boxes array, (N, 6); an empty one when the batch has none.
  YOLOFLOW_SDK_API const TargetArray& boxes() const;
  YOLOFLOW_SDK_API TargetArray& boxes();
  std::int64_t num_boxes() const { return boxes().rows(); }
  // The named array; throws yoloflow::Error naming what the batch holds when it is missing.
  YOLOFLOW_SDK_API const TargetArray& target(const std::string& name) const;
  bool has_target(const std::string& name) const { return targets.count(name) > 0; }
  std::uint8_t* image_data(std::int64_t i) const { return pixels.get() + i * height * width * 3; }
};

}  // namespace yoloflow
