// hsv, loaded as a real plugin: value and saturation gains within their ranges, boxes
// untouched and still on their (recoloured) pixels, same seed -> same output.
#include "augmentation/tests/painted_samples.h"

using namespace yoloflow;

TEST_CASE("hsv changes colours within the gains, never the boxes") {
  core::PluginManager pm;
  auto hsv = test::make_augmentation(pm, "hsv", json::object(), 160);  // 0.015, 0.7, 0.4
  Sample base = test::painted_sample(160, 120, {{10, 10, 50, 40}, {80, 60, 60, 50}});
  // A grey patch: saturation 0 stays 0, value 100 becomes 100 * (1 +- 0.4).
  cv::rectangle(base.image, cv::Rect(120, 0, 40, 20), cv::Scalar(100, 100, 100), cv::FILLED);
  test::FixedLoader loader({});
  double vmin = 255, vmax = 0;
  int changed = 0;
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    CAPTURE(seed);
    const Sample out = test::augmented(*hsv, base, seed, 160, loader);
    REQUIRE(out.boxes.size() == base.boxes.size());
    for (std::size_t i = 0; i < out.boxes.size(); ++i) {
      CHECK(out.boxes[i].x1 == base.boxes[i].x1);
      CHECK(out.boxes[i].y2 == base.boxes[i].y2);
    }
    const cv::Vec3b grey = out.image.at<cv::Vec3b>(5, 130);
    CHECK(grey[0] == grey[1]);
    CHECK(grey[1] == grey[2]);
    CHECK(grey[0] >= 59);
    CHECK(grey[0] <= 141);
    vmin = std::min<double>(vmin, grey[0]);
    vmax = std::max<double>(vmax, grey[0]);
    // Black stays black; the painted rectangles stay non-black exactly under their boxes.
    CHECK(out.image.at<cv::Vec3b>(100, 5) == cv::Vec3b(0, 0, 0));
    cv::Mat gray, mask;
    cv::cvtColor(out.image, gray, cv::COLOR_BGR2GRAY);
    cv::threshold(gray, mask, 0, 255, cv::THRESH_BINARY);
    for (const auto& b : out.boxes) {
      const cv::Rect box(static_cast<int>(b.x1), static_cast<int>(b.y1), static_cast<int>(b.width()),
                         static_cast<int>(b.height()));
      CHECK(cv::countNonZero(mask(box)) == box.area());
      // Nothing painted just outside the box.
      CHECK(cv::countNonZero(mask(cv::Rect(box.x, box.y + box.height, box.width, 1))) == 0);
    }
    if (cv::norm(out.image, base.image, cv::NORM_INF) > 0) ++changed;
    CHECK(test::same_output(out, test::augmented(*hsv, base, seed, 160, loader)));
  }
  CHECK(changed >= 95);
  // The value gain spans most of its range over 100 draws.
  CHECK(vmin < 75);
  CHECK(vmax > 125);

  auto off = test::make_augmentation(pm, "hsv", {{"hsv_h", 0.0}, {"hsv_s", 0.0}, {"hsv_v", 0.0}}, 160);
  CHECK(test::same_output(test::augmented(*off, base, 1, 160, loader), base));
}
