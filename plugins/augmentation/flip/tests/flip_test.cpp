// flip, loaded as a real plugin: boxes follow the mirrored pixels for many seeds, the
// probabilities hold, same seed -> same output; in-place mirroring equals cv::flip into a new
// image and leaves shared pixels alone.
#include <opencv2/imgcodecs.hpp>

#include "augmentation/tests/painted_samples.h"

using namespace yoloflow;

namespace {
const std::vector<cv::Rect> kRects = {{10, 20, 60, 40}, {150, 90, 40, 70}, {90, 5, 30, 30}};
}

TEST_CASE("flip moves boxes with the mirrored pixels, at the configured rates") {
  plugin_test::PluginSet pm;
  auto flip = plugin_test::make_augmentation(pm, "flip", {{"fliplr", 0.5}, {"flipud", 0.5}}, 200);
  const Sample base = test::painted_sample(200, 160, kRects);
  test::FixedLoader loader({});
  int lr = 0, ud = 0;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    CAPTURE(seed);
    const Sample out = test::augmented(*flip, base, seed, 200, loader);
    REQUIRE(out.boxes.size() == 3);
    test::check_boxes_on_paint(out, 0.99, 0.01);
    if (out.boxes[0].x1 != base.boxes[0].x1) ++lr;
    if (out.boxes[0].y1 != base.boxes[0].y1) ++ud;
    CHECK(test::same_output(out, test::augmented(*flip, base, seed, 200, loader)));
  }
  // 200 draws at p = 0.5: far outside [60, 140] would mean a broken probability.
  CHECK(lr > 60);
  CHECK(lr < 140);
  CHECK(ud > 60);
  CHECK(ud < 140);

  auto never = plugin_test::make_augmentation(pm, "flip", {{"fliplr", 0.0}, {"flipud", 0.0}}, 200);
  auto always = plugin_test::make_augmentation(pm, "flip", {{"fliplr", 1.0}, {"flipud", 0.0}}, 200);
  CHECK(test::same_output(test::augmented(*never, base, 3, 200, loader), base));
  const Sample mirrored = test::augmented(*always, base, 3, 200, loader);
  CHECK(mirrored.boxes[0].x1 == doctest::Approx(200 - 70));
  CHECK(mirrored.boxes[0].x2 == doctest::Approx(200 - 10));
  CHECK(mirrored.boxes[0].y1 == doctest::Approx(20));
}

TEST_CASE("flip mirrors a coco128 image like cv::flip, in place only when the sample owns it") {
  plugin_test::PluginSet pm;
  auto both = plugin_test::make_augmentation(pm, "flip", {{"fliplr", 1.0}, {"flipud", 1.0}}, 640);
  auto lr_only = plugin_test::make_augmentation(pm, "flip", {{"fliplr", 1.0}, {"flipud", 0.0}}, 640);
  test::FixedLoader loader({});
  Sample s;
  s.path = test::coco128_dir() + "/images/train2017/000000000025.jpg";  // 640x426
  s.image = cv::imread(s.path);
  REQUIRE_FALSE(s.image.empty());
  s.boxes = {Box{10, 20, 110, 220, 1}};
  cv::Mat expected_lr, expected_both;
  cv::flip(s.image, expected_lr, 1);
  cv::flip(s.image, expected_both, -1);

  const Sample a = test::augmented(*lr_only, s, 0, 640, loader);  // owns a clone: in place
  CHECK(cv::norm(a.image, expected_lr, cv::NORM_INF) == 0);
  CHECK(a.boxes[0].x1 == doctest::Approx(s.image.cols - 110));
  CHECK(a.boxes[0].y1 == doctest::Approx(20));
  const Sample b = test::augmented(*both, s, 0, 640, loader);
  CHECK(cv::norm(b.image, expected_both, cv::NORM_INF) == 0);
  CHECK(b.boxes[0].y2 == doctest::Approx(s.image.rows - 20));

  // Another header shares the pixels: they stay as they were, the sample gets its own copy.
  const cv::Mat before = s.image.clone();
  Sample shared = s;
  Rng rng(0);
  AugmentContext ctx{rng, loader, 640, 0};
  both->apply(shared, ctx);
  CHECK(cv::norm(s.image, before, cv::NORM_INF) == 0);
  CHECK(cv::norm(shared.image, expected_both, cv::NORM_INF) == 0);
  // A region of a larger image (not continuous) is mirrored as a region.
  Sample roi = s;
  roi.image = before.clone()(cv::Rect(7, 3, 301, 200));
  REQUIRE_FALSE(roi.image.isContinuous());
  cv::Mat expected_roi;
  cv::flip(before(cv::Rect(7, 3, 301, 200)), expected_roi, -1);
  both->apply(roi, ctx);
  CHECK(cv::norm(roi.image, expected_roi, cv::NORM_INF) == 0);
}
