// hsv, loaded as a real plugin: value and saturation gains within their ranges, boxes
// untouched and still on their (recoloured) pixels, same seed -> same output; and the
// banded, in-place implementation equal bit for bit to the whole-image reference.
#include <opencv2/imgcodecs.hpp>

#include "augmentation/tests/painted_samples.h"
#include "yoloflow/rng.h"

using namespace yoloflow;

TEST_CASE("hsv changes colours within the gains, never the boxes") {
  plugin_test::PluginSet pm;
  auto hsv = plugin_test::make_augmentation(pm, "hsv", json::object(), 160);  // 0.015, 0.7, 0.4
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

  // Hue is shifted around the colour circle, not scaled: pure red (hue 0) changes too.
  auto hue_only = plugin_test::make_augmentation(pm, "hsv", {{"hsv_h", 0.1}, {"hsv_s", 0.0}, {"hsv_v", 0.0}}, 160);
  Sample red = base;
  red.image = cv::Mat(120, 160, CV_8UC3, cv::Scalar(0, 0, 255));
  int recoloured = 0;
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    const cv::Vec3b px = test::augmented(*hue_only, red, seed, 160, loader).image.at<cv::Vec3b>(60, 80);
    if (px != cv::Vec3b(0, 0, 255)) ++recoloured;
  }
  CHECK(recoloured >= 18);

  auto off = plugin_test::make_augmentation(pm, "hsv", {{"hsv_h", 0.0}, {"hsv_s", 0.0}, {"hsv_v", 0.0}}, 160);
  CHECK(test::same_output(test::augmented(*off, base, 1, 160, loader), base));
}

namespace {

// The straightforward RandomHSV: the three gains drawn as the plugin draws them, the whole
// image to OpenCV's 8-bit HSV, one 3-channel LUT, back to BGR.
cv::Mat reference_hsv(const cv::Mat& bgr, std::uint64_t seed, const double gains[3]) {
  Rng rng(seed);
  double r[3];
  for (int c = 0; c < 3; ++c) r[c] = rng.uniform(-1.0, 1.0) * gains[c];
  cv::Mat lut(1, 256, CV_8UC3);
  for (int x = 0; x < 256; ++x) {
    auto& v = lut.at<cv::Vec3b>(0, x);
    const double hue = x + r[0] * 180.0;
    v[0] = static_cast<uchar>(static_cast<int>(hue - 180.0 * std::floor(hue / 180.0)));
    v[1] = static_cast<uchar>(std::clamp(x * (1 + r[1]), 0.0, 255.0));
    v[2] = static_cast<uchar>(std::clamp(x * (1 + r[2]), 0.0, 255.0));
  }
  cv::Mat hsv, out;
  cv::cvtColor(bgr, hsv, cv::COLOR_BGR2HSV);
  cv::LUT(hsv, lut, hsv);
  cv::cvtColor(hsv, out, cv::COLOR_HSV2BGR);
  return out;
}

}  // namespace

TEST_CASE("hsv equals whole-image BGR2HSV -> LUT -> HSV2BGR bit for bit on coco128 images") {
  plugin_test::PluginSet pm;
  const double defaults[3] = {0.015, 0.7, 0.4}, strong[3] = {0.5, 0.9, 0.9};
  auto hsv_default = plugin_test::make_augmentation(pm, "hsv", json::object(), 640);
  auto hsv_strong = plugin_test::make_augmentation(pm, "hsv", {{"hsv_h", 0.5}, {"hsv_s", 0.9}, {"hsv_v", 0.9}}, 640);
  test::FixedLoader loader({});
  const std::string dir = test::coco128_dir() + "/images/train2017/";
  int images = 0;
  for (const char* name : {"000000000009.jpg", "000000000025.jpg", "000000000030.jpg", "000000000034.jpg",
                           "000000000036.jpg", "000000000042.jpg"}) {
    CAPTURE(name);
    Sample s;
    s.path = dir + name;
    s.image = cv::imread(s.path);
    REQUIRE_FALSE(s.image.empty());
    ++images;
    // The file's own size (widths not a multiple of any SIMD width) and the 640 training size.
    cv::Mat square;
    cv::resize(s.image, square, cv::Size(640, 640));
    for (const cv::Mat& image : {s.image, square}) {
      Sample in = s;
      in.image = image;
      for (std::uint64_t seed = 0; seed < 4; ++seed) {
        CAPTURE(seed);
        const Sample a = test::augmented(*hsv_default, in, seed, 640, loader);
        CHECK(cv::norm(a.image, reference_hsv(image, seed, defaults), cv::NORM_INF) == 0);
        const Sample b = test::augmented(*hsv_strong, in, seed, 640, loader);
        CHECK(cv::norm(b.image, reference_hsv(image, seed, strong), cv::NORM_INF) == 0);
      }
    }
    // Pixels the sample does not own (another header shares them) are left as they were.
    const cv::Mat before = s.image.clone();
    Sample shared = s;  // s.image and shared.image: the same pixels
    Rng rng(9);
    AugmentContext ctx{rng, loader, 640, 0};
    hsv_strong->apply(shared, ctx);
    CHECK(cv::norm(s.image, before, cv::NORM_INF) == 0);
    CHECK(cv::norm(shared.image, reference_hsv(before, 9, strong), cv::NORM_INF) == 0);
  }
  CHECK(images == 6);
}
