#pragma once
// What flows on graph edges: a Sample (one image and its boxes) and a Batch.
// OpenCV only; no LibTorch here, so data plugins compile quickly.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "yoloflow/export.h"

namespace yoloflow {

// One labelled box in pixel coordinates of the image it belongs to.
struct Box {
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;
  int cls = 0;
  float width() const { return x2 - x1; }
  float height() const { return y2 - y1; }
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
  std::vector<Box> boxes;  // pixel coordinates in `image`
  Geometry geometry;
  std::uint64_t sequence = 0;  // position in this epoch's order (set by the host)
};

// Per-sample information kept in a batch.
struct SampleInfo {
  std::size_t index = 0;
  std::string path;
  Geometry geometry;
  std::uint64_t sequence = 0;  // Sample::sequence: where a resumed epoch continues from
};

// A batch as training and evaluation consume it.
// Pixels: `size` images of height x width, RGB, uint8, stored NHWC (channels-last), so a
// tensor view with logical shape NCHW costs no copy and suits channels_last models.
// Targets: one row of 6 floats per box, [batch_idx, cls, cx, cy, w, h], coordinates
// normalised to 0..1 by the batch's width and height (Ultralytics' layout).
struct Batch {
  std::int64_t size = 0, height = 0, width = 0;
  std::shared_ptr<std::uint8_t> pixels;  // size*height*width*3 bytes; owner may be pinned memory
  std::vector<float> targets;
  std::vector<SampleInfo> samples;
  int epoch = 0;
  std::int64_t index = 0;  // batch number within the epoch
  std::int64_t num_boxes() const { return static_cast<std::int64_t>(targets.size() / 6); }
  std::uint8_t* image_data(std::int64_t i) const { return pixels.get() + i * height * width * 3; }
};

}  // namespace yoloflow
