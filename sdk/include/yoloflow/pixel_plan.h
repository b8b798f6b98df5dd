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
//   mixes    optionally, other planned images mixed in, in order, after the tiles (and warp):
//            blended, cv::addWeighted(this, r, other, 1 - r, 0) (mixup), or pasted, other's
//            pixels inside a rectangle (cutmix); an image mixed in may have mixes of its own;
//   hsv      cvtColor(BGR2HSV) -> a lookup table per channel -> cvtColor(HSV2BGR);
//   flips    the image mirrored left-right and/or upside down, after the colours.
// A stage needing anything else (a perspective warp) says so in Augmentation::plan_support(),
// and the whole chain then works on pixels as usual. A mix added after colours or flips is
// refused (mix_in throws): mixes come before them, as in Ultralytics' order.
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

struct PixelPlan;

// Another planned image mixed into a plan (PixelPlan::mixes).
struct MixedImage {
  std::shared_ptr<const PixelPlan> image;  // the same size as the plan it is mixed into
  bool paste = false;  // false: blended with weight `ratio` for this image; true: pasted inside `rect`
  double ratio = 0.5;
  cv::Rect rect;
};

struct PixelPlan {
  int width = 0, height = 0;  // the output image
  std::uint8_t fill = 114;    // grey where no tile lands
  std::vector<ResizedTile> tiles;
  // Set: the tiles land on the canvas (their `to` in its pixels), which this warps into the output.
  bool warped = false;
  AffineWarp warp;
  // Other images mixed in, in order, after the tiles and warp, before the colours and flips.
  std::vector<MixedImage> mixes;
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
  struct Mix {
    int image = 0;  // in `images`, past the batch's own
    bool paste = false;
    double ratio = 0.5;
    cv::Rect rect;
  };
  struct Image {
    int first_mix = 0, mixes = 0;   // its mixes in `mixes`
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
  // One per sample of the batch, then the images mixed into them (no colours or flips).
  std::vector<Image> images;
  std::vector<Mix> mixes;
};

// Images mixed into images mixed into ... a batch's image, at most this deep (mixup then cutmix,
// whose other sample went through mixup: 2).
inline constexpr int kMaxMixDepth = 3;

// The sample's plan, made first from its pixels when it has none (one tile: the whole image as
// it is), its `image` then released: what an augmentation that plans calls before changing it.
YOLOFLOW_SDK_API PixelPlan& plan_of(Sample& sample);
// The size of the sample's image, whether its pixels are made or planned.
YOLOFLOW_SDK_API cv::Size image_size(const Sample& sample);
// Mixes `other` (planned; its pixels are released) into `sample`'s plan (made from its pixels
// when it has none): blended with weight `ratio` for `sample` when `paste` is false, else pasted
// inside `rect`. Throws yoloflow::Error when the two differ in size, the rectangle is not inside
// the image, or `sample`'s plan already changes colours or flips (a mix comes before them).
YOLOFLOW_SDK_API void mix_in(Sample& sample, Sample& other, bool paste, double ratio, const cv::Rect& rect);
// A batch's plans gathered: each distinct source image once. Throws yoloflow::Error when a plan
// reads outside its source image or lands outside its output, or has another size than `width`
// x `height`, or mixes in images deeper than kMaxMixDepth.
YOLOFLOW_SDK_API PlannedPixels plan_batch(const std::vector<const PixelPlan*>& plans, int width, int height);

}  // namespace yoloflow
