// What train_batch*.jpg shows of a segmentation batch: each instance's mask, recovered from the
// batch's mask targets (one plane per image or one per instance), filled in its class's colour
// under the boxes.
#include <doctest/doctest.h>

#include <opencv2/core.hpp>

#include "training/detect/sample_grid.h"

using namespace yoloflow;

namespace {

// Two 32 x 32 grey images; image 0 has two instances (the second over the first's corner),
// image 1 one. Boxes normalised; masks at 1/4 (8 x 8).
Batch seg_batch(bool overlap) {
  Batch b;
  b.size = 2;
  b.height = b.width = 32;
  b.pixels = std::shared_ptr<std::uint8_t>(new std::uint8_t[2 * 32 * 32 * 3], std::default_delete<std::uint8_t[]>());
  std::fill(b.pixels.get(), b.pixels.get() + 2 * 32 * 32 * 3, 128);
  b.boxes() = TargetArray{{3, 6}, {0, 0, 0.25f, 0.25f, 0.5f, 0.5f,  //
                                   0, 1, 0.5f, 0.5f, 0.25f, 0.25f,  //
                                   1, 2, 0.5f, 0.5f, 1.0f, 1.0f}};
  std::vector<float> planes;
  if (overlap) {
    planes.assign(2 * 64, 0.0f);
    for (int y = 0; y < 4; ++y) for (int x = 0; x < 4; ++x) planes[y * 8 + x] = 1;      // instance 0
    for (int y = 3; y < 5; ++y) for (int x = 3; x < 5; ++x) planes[y * 8 + x] = 2;      // instance 1 on top
    for (int y = 0; y < 8; ++y) for (int x = 0; x < 8; ++x) planes[64 + y * 8 + x] = 1;  // image 1
    b.targets["image_masks"] = TargetArray{{2, 8, 8}, planes};
  } else {
    planes.assign(3 * 64, 0.0f);
    for (int y = 0; y < 4; ++y) for (int x = 0; x < 4; ++x) planes[y * 8 + x] = 1;
    for (int y = 3; y < 5; ++y) for (int x = 3; x < 5; ++x) planes[64 + y * 8 + x] = 1;
    for (int k = 0; k < 64; ++k) planes[128 + k] = 1;
    b.targets["masks"] = TargetArray{{3, 8, 8}, planes};
  }
  b.samples.resize(2);
  return b;
}

}  // namespace

TEST_CASE("samples_of_batch: a segmentation batch's masks per instance, from either layout") {
  for (const bool overlap : {true, false}) {
    CAPTURE(overlap);
    const auto samples = core::samples_of_batch(seg_batch(overlap));
    REQUIRE(samples.size() == 2);
    REQUIRE(samples[0].masks.size() == 2);
    REQUIRE(samples[1].masks.size() == 1);
    CHECK(samples[0].masks[0].size() == cv::Size(32, 32));
    // Instance 1 covers mask pixels (3..4, 3..4): image pixels 12..19.
    CHECK(cv::countNonZero(samples[0].masks[1]) == 8 * 8);
    CHECK(samples[0].masks[1].at<std::uint8_t>(15, 15) != 0);
    CHECK(samples[0].masks[1].at<std::uint8_t>(2, 2) == 0);
    // With overlaps the smaller instance hides the larger one's pixels under it.
    CHECK(cv::countNonZero(samples[0].masks[0]) == (overlap ? 16 * 16 - 4 * 4 : 16 * 16));
    CHECK(cv::countNonZero(samples[1].masks[0]) == 32 * 32);
  }
  // The grid blends the masks' colours over the grey: pixels inside change, outside stay.
  const auto samples = core::samples_of_batch(seg_batch(true));
  const cv::Mat grid = core::draw_sample_grid({samples[0]}, {"a", "b", "c"}, 1920);
  REQUIRE(grid.size() == cv::Size(32, 32));
  CHECK(grid.at<cv::Vec3b>(6, 6) != cv::Vec3b(128, 128, 128));
  CHECK(grid.at<cv::Vec3b>(28, 28) == cv::Vec3b(128, 128, 128));
}
