// mixup, loaded as a real plugin: both samples' boxes on their blended pixels, the blend
// ratio near 0.5 (Beta(32, 32)), the other sample letterboxed to this one's size.
#include "augmentation/tests/painted_samples.h"

using namespace yoloflow;

TEST_CASE("mixup blends another sample in and keeps both samples' boxes on their pixels") {
  plugin_test::PluginSet pm;
  auto mixup = plugin_test::make_augmentation(pm, "mixup", {{"p", 1.0}}, 160);
  const Sample base = test::painted_sample(160, 160, {{10, 10, 50, 60}, {20, 100, 40, 40}}, 0);
  test::FixedLoader loader({test::painted_sample(160, 160, {{100, 20, 50, 50}, {90, 90, 60, 60}}, 2, 0),
                            test::painted_sample(160, 160, {{110, 40, 30, 100}}, 4, 1)});
  double rmin = 1, rmax = 0;
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    CAPTURE(seed);
    const Sample out = test::augmented(*mixup, base, seed, 160, loader);
    REQUIRE(out.boxes.size() >= 3);
    CHECK(out.boxes[0].cls == 0);
    CHECK(out.boxes[1].cls == 1);
    // The ratio from a pixel of base's first (red) rectangle.
    const double r = out.image.at<cv::Vec3b>(30, 30)[2] / 255.0;
    rmin = std::min(rmin, r);
    rmax = std::max(rmax, r);
    CHECK(r > 0.25);
    CHECK(r < 0.75);
    for (const auto& b : out.boxes) {
      const double weight = b.cls < 2 ? r : 1 - r;
      CAPTURE(b.cls);
      const cv::Scalar colour = test::paint_colours()[static_cast<std::size_t>(b.cls)] * weight;
      cv::Mat mask;
      cv::inRange(out.image, colour - cv::Scalar(3, 3, 3), colour + cv::Scalar(3, 3, 3), mask);
      const cv::Rect painted = cv::boundingRect(mask);
      CHECK(test::iou(b, painted) >= 0.99);
    }
    CHECK(test::same_output(out, test::augmented(*mixup, base, seed, 160, loader)));
  }
  // Beta(32, 32) has a standard deviation of 0.06: 100 draws spread but stay near 0.5.
  CHECK(rmin < 0.47);
  CHECK(rmax > 0.53);
  CHECK(rmin > 0.25);
  CHECK(rmax < 0.75);
}

TEST_CASE("mixup letterboxes another sample of a different size into this one's") {
  plugin_test::PluginSet pm;
  auto mixup = plugin_test::make_augmentation(pm, "mixup", {{"p", 1.0}}, 160);
  const Sample base = test::painted_sample(160, 160, {{10, 10, 50, 60}}, 0);
  // 160x80: fitted unscaled, 40 rows of grey above and below.
  test::FixedLoader loader({test::painted_sample(160, 80, {{100, 20, 50, 40}}, 2)});
  const Sample out = test::augmented(*mixup, base, 5, 160, loader);
  REQUIRE(out.boxes.size() == 2);
  CHECK(out.boxes[1].x1 == doctest::Approx(100));
  CHECK(out.boxes[1].y1 == doctest::Approx(60));
  CHECK(out.boxes[1].y2 == doctest::Approx(100));

  auto never = plugin_test::make_augmentation(pm, "mixup", json::object(), 160);  // p = 0 by default
  CHECK(test::same_output(test::augmented(*never, base, 5, 160, loader), base));
}
