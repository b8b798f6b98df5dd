// flip, loaded as a real plugin: boxes follow the mirrored pixels for many seeds, the
// probabilities hold, same seed -> same output.
#include "augmentation/tests/painted_samples.h"

using namespace yoloflow;

namespace {
const std::vector<cv::Rect> kRects = {{10, 20, 60, 40}, {150, 90, 40, 70}, {90, 5, 30, 30}};
}

TEST_CASE("flip moves boxes with the mirrored pixels, at the configured rates") {
  core::PluginManager pm;
  auto flip = test::make_augmentation(pm, "flip", {{"fliplr", 0.5}, {"flipud", 0.5}}, 200);
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

  auto never = test::make_augmentation(pm, "flip", {{"fliplr", 0.0}, {"flipud", 0.0}}, 200);
  auto always = test::make_augmentation(pm, "flip", {{"fliplr", 1.0}, {"flipud", 0.0}}, 200);
  CHECK(test::same_output(test::augmented(*never, base, 3, 200, loader), base));
  const Sample mirrored = test::augmented(*always, base, 3, 200, loader);
  CHECK(mirrored.boxes[0].x1 == doctest::Approx(200 - 70));
  CHECK(mirrored.boxes[0].x2 == doctest::Approx(200 - 10));
  CHECK(mirrored.boxes[0].y1 == doctest::Approx(20));
}
