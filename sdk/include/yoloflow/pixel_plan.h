#pragma once
// Pixels described instead of made. With a training device that composes images (a CUDA GPU,
// the train sink's `augment_on`), the augmentation chain still runs on the CPU workers, draws
// every random value and moves every annotation, but an augmentation that supports it writes
// what it would do to the pixels into the sample's PixelPlan instead of doing it; the batcher
// gathers the plans with the decoded images they read, and the training device composes the
// whole batch at once. The CPU only decodes (and resizes each image once, in the source).
//
// Each operation is the arithmetic of the CPU plugins', reproduced exactly:
//   tiles    cv::resize(source(from), output(to), INTER_LINEAR) with OpenCV's 11-bit fixed-point
//            weights, in order (a later tile over an earlier), `fill` where no tile lands;
//   warp     optionally, the tiles make a canvas instead, which cv::warpAffine (INTER_LINEAR,
//            BORDER_CONSTANT) maps into the output (a mosaic's canvas under random_perspective);
//   hsv      cvtColor(BGR2HSV) -> a lookup table per channel -> cvtColor(HSV2BGR);
//   flips    the image mirrored left-right and/or upside down, after the colours.
// A stage needing anything else (a perspective warp, a blend of two images) says so in
// Augmentation::plan_support(), and the whole chain then works on pixels as usual.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <opencv2/core.hpp>

#include "yoloflow/export.h"

namespace yoloflow {

struct Sample;

// cv::resize of `source(from)` into the output rectangle `to` (bilinear).
struct ResizedTile {
  cv::Mat source;  // 8-bit BGR decoded image, shared with the source or a cache (never written)
  cv::Rect from;   // the part of `source` that is resized
  cv::Rect to;     // where it lands in the output
};

// cv::warpAffine of the canvas the tiles make into the output.
struct AffineWarp {
  cv::Matx23d matrix;  // canvas pixel -> output pixel, as warpAffine takes it
  int canvas_width = 0, canvas_height = 0;
  std::uint8_t border = 114;  // outside the canvas
};

struct PixelPlan {
  int width = 0, height = 0;  // the output image
  std::uint8_t fill = 114;    // grey where no tile lands
  std::vector<ResizedTile> tiles;
  // Set: the tiles land on the canvas (their `to` in its pixels), which this warps into the output.
  bool warped = false;
  AffineWarp warp;
  // Lookup tables of OpenCV's 8-bit HSV (hue 0..179; saturation, value 0..255), applied when
  // `hsv` is set: hue, saturation, value, 256 entries each.
  bool hsv = false;
  std::array<std::uint8_t, 3 * 256> hsv_tables{};
  bool flip_lr = false, flip_ud = false;
};

// Which decoded image a view reads: its pixels' address, size and row step. Views of one image
// are one source; while an image is alive no other image has its address.
using DecodedImageKey = std::tuple<const std::uint8_t*, int, int, std::size_t>;
inline DecodedImageKey decoded_image_key(const cv::Mat& image) {
  return DecodedImageKey{image.data, image.rows, image.cols, image.step[0]};
}

// A batch's plans (Batch::planned; Batch::pixels is then empty): the decoded images they read,
// each once, and their tiles pointing at them. No pixel is copied: the consumer reads the images
// where they are (a CUDA consumer uploads each image once and keeps it while later batches'
// mosaics read it).
struct PlannedPixels {
  struct Tile {
    int source = 0;  // in `sources`
    cv::Rect from, to;
  };
  struct Image {
    int first_tile = 0, tiles = 0;  // its tiles in `tiles`
    std::uint8_t fill = 114;
    bool warped = false;
    AffineWarp warp;
    bool hsv = false;
    std::array<std::uint8_t, 3 * 256> hsv_tables{};
    bool flip_lr = false, flip_ud = false;
  };
  std::vector<cv::Mat> sources;  // 8-bit BGR, distinct
  std::vector<Tile> tiles;
  std::vector<Image> images;  // one per sample of the batch
};

// The sample's plan, made first from its pixels when it has none (one tile: the whole image as
// it is), its `image` then released: what an augmentation that plans calls before changing it.
YOLOFLOW_SDK_API PixelPlan& plan_of(Sample& sample);
// The size of the sample's image, whether its pixels are made or planned.
YOLOFLOW_SDK_API cv::Size image_size(const Sample& sample);
// A batch's plans gathered: each distinct source image once. Throws yoloflow::Error when a plan
// reads outside its source image or lands outside its output, or has another size than `width`
// x `height`.
YOLOFLOW_SDK_API PlannedPixels plan_batch(const std::vector<const PixelPlan*>& plans, int width, int height);

}  // namespace yoloflow
