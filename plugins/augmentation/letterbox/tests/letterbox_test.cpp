// letterbox, loaded as a real plugin: painted rectangles must stay under their boxes,
// padding and sizes follow Ultralytics' LetterBox rules, geometry maps boxes back.
#include <doctest/doctest.h>

#include <opencv2/imgproc.hpp>

#include "support/plugin_set.h"
#include "yoloflow/augmentation.h"
#include "yoloflow/error.h"

using namespace yoloflow;

namespace {

std::unique_ptr<Augmentation> make_letterbox(plugin_test::PluginSet& pm, const json& params, int imgsz) {
  return plugin_test::make_component<Augmentation>(pm, Kind::Augmentation, "letterbox", params, {imgsz});
}

// Letterbox never needs other samples.
class NoLoader final : public SampleLoader {
 public:
  std::size_t size() const override { return 0; }
  Sample load(std::size_t) override { throw Error("no samples in this test"); }
};

void apply(Augmentation& aug, Sample& s, int imgsz) {
  Rng rng(1);
  NoLoader loader;
  AugmentContext ctx{rng, loader, imgsz, 0};
  aug.apply(s, ctx);
}

const cv::Scalar kBackground(30, 30, 30);
const cv::Scalar kColours[] = {cv::Scalar(0, 0, 255), cv::Scalar(0, 255, 0), cv::Scalar(255, 0, 0)};

// Rectangles painted at their boxes (pixel [x1, x2) x [y1, y2)), one colour each.
Sample painted_sample(int w, int h, const std::vector<cv::Rect>& rects) {
  Sample s;
  s.path = "painted.png";
  s.image = cv::Mat(h, w, CV_8UC3, kBackground);
  for (std::size_t i = 0; i < rects.size(); ++i) {
    cv::rectangle(s.image, rects[i], kColours[i], cv::FILLED);
    const auto& r = rects[i];
    s.boxes.push_back(Box{static_cast<float>(r.x), static_cast<float>(r.y),
                          static_cast<float>(r.x + r.width), static_cast<float>(r.y + r.height),
                          static_cast<int>(i)});
  }
  s.geometry.original_width = w;
  s.geometry.original_height = h;
  return s;
}

// Bounding rectangle of the pixels clearly of `colour` (blended edge pixels excluded).
cv::Rect painted_extent(const cv::Mat& image, const cv::Scalar& colour) {
  cv::Mat mask;
  cv::inRange(image, colour - cv::Scalar(100, 100, 100), colour + cv::Scalar(100, 100, 100), mask);
  return cv::boundingRect(mask);
}

// Every box edge within `tol` pixels of the painted rectangle's edge.
void check_boxes_match_pixels(const Sample& s, double tol) {
  for (const auto& b : s.boxes) {
    const cv::Rect r = painted_extent(s.image, kColours[b.cls]);
    CAPTURE(b.cls);
    REQUIRE(r.area() > 0);
    CHECK(std::abs(b.x1 - r.x) <= tol);
    CHECK(std::abs(b.y1 - r.y) <= tol);
    CHECK(std::abs(b.x2 - (r.x + r.width)) <= tol);
    CHECK(std::abs(b.y2 - (r.y + r.height)) <= tol);
  }
}

bool is_pad(const cv::Mat& im, int y, int x) { return im.at<cv::Vec3b>(y, x) == cv::Vec3b(114, 114, 114); }

const std::vector<cv::Rect> kRects = {{20, 30, 100, 80}, {200, 50, 80, 130}, {140, 150, 50, 45}};

}  // namespace

TEST_CASE("letterbox enlarges, centres and pads like Ultralytics, boxes on their pixels") {
  plugin_test::PluginSet pm;
  auto lb = make_letterbox(pm, json::object(), 640);
  Sample s = painted_sample(300, 200, kRects);
  apply(*lb, s, 640);
  REQUIRE(s.image.cols == 640);
  REQUIRE(s.image.rows == 640);
  // r = 640/300; 200 * r = 426.67 -> 427 rows; 213 rows of padding: 106 above, 107 below.
  CHECK(is_pad(s.image, 105, 320));
  CHECK_FALSE(is_pad(s.image, 106, 320));
  CHECK_FALSE(is_pad(s.image, 532, 320));
  CHECK(is_pad(s.image, 533, 320));
  CHECK(is_pad(s.image, 0, 0));
  CHECK(is_pad(s.image, 639, 639));
  CHECK(s.geometry.pad_x == doctest::Approx(0.0));
  CHECK(s.geometry.pad_y == doctest::Approx(106.0));
  CHECK(s.geometry.ratio_x == doctest::Approx(640.0 / 300.0));
  CHECK(s.geometry.ratio_y == doctest::Approx(427.0 / 200.0));
  check_boxes_match_pixels(s, 1.5);
  // Geometry maps every box back to where it was painted.
  for (std::size_t i = 0; i < kRects.size(); ++i) {
    const auto& b = s.boxes[i];
    CHECK((b.x1 - s.geometry.pad_x) / s.geometry.ratio_x == doctest::Approx(kRects[i].x).epsilon(1e-4));
    CHECK((b.y2 - s.geometry.pad_y) / s.geometry.ratio_y ==
          doctest::Approx(kRects[i].y + kRects[i].height).epsilon(1e-4));
  }
}

TEST_CASE("letterbox shrinks to the size parameter, overriding imgsz") {
  plugin_test::PluginSet pm;
  auto lb = make_letterbox(pm, {{"size", 150}}, 640);
  Sample s = painted_sample(300, 200, kRects);
  apply(*lb, s, 640);
  REQUIRE(s.image.cols == 150);
  REQUIRE(s.image.rows == 150);
  // 300x200 -> 150x100, 25 rows above and below.
  CHECK(s.geometry.pad_y == doctest::Approx(25.0));
  CHECK(is_pad(s.image, 24, 75));
  CHECK_FALSE(is_pad(s.image, 25, 75));
  CHECK_FALSE(is_pad(s.image, 124, 75));
  CHECK(is_pad(s.image, 125, 75));
  check_boxes_match_pixels(s, 1.5);
}

TEST_CASE("letterbox to height x width: a rectangular output, padding centred on the short axis") {
  plugin_test::PluginSet pm;
  // A validation batch's shape: 512 high, 672 wide; a 640x480 image is not enlarged.
  auto lb = make_letterbox(pm, {{"height", 512}, {"width", 672}, {"scaleup", false}}, 640);
  Sample s = painted_sample(640, 480, kRects);
  apply(*lb, s, 640);
  REQUIRE(s.image.cols == 672);
  REQUIRE(s.image.rows == 512);
  CHECK(s.geometry.ratio_x == doctest::Approx(1.0));
  CHECK(s.geometry.pad_x == doctest::Approx(16.0));
  CHECK(s.geometry.pad_y == doctest::Approx(16.0));
  CHECK(is_pad(s.image, 256, 15));
  CHECK_FALSE(is_pad(s.image, 256, 16));
  check_boxes_match_pixels(s, 1.0);
  // Only one of the two given: the other side is `size`.
  auto tall = make_letterbox(pm, {{"size", 320}, {"height", 480}}, 640);
  Sample t = painted_sample(300, 200, kRects);
  apply(*tall, t, 640);
  CHECK(t.image.cols == 320);
  CHECK(t.image.rows == 480);
}

TEST_CASE("letterbox without scaleup pads a small image without enlarging it") {
  plugin_test::PluginSet pm;
  auto lb = make_letterbox(pm, {{"scaleup", false}, {"pad_value", 0}}, 640);
  Sample s = painted_sample(300, 200, kRects);
  const cv::Mat before = s.image.clone();
  apply(*lb, s, 640);
  REQUIRE(s.image.size() == cv::Size(640, 640));
  // (640-300)/2 = 170 columns left, (640-200)/2 = 220 rows above; pixels copied unchanged.
  CHECK(cv::norm(s.image(cv::Rect(170, 220, 300, 200)), before, cv::NORM_INF) == 0);
  CHECK(s.image.at<cv::Vec3b>(0, 0) == cv::Vec3b(0, 0, 0));
  CHECK(s.boxes[0].x1 == doctest::Approx(20 + 170));
  CHECK(s.boxes[0].y1 == doctest::Approx(30 + 220));
  CHECK(s.geometry.ratio_x == doctest::Approx(1.0));
  check_boxes_match_pixels(s, 0.01);
}

TEST_CASE("letterbox auto pads only to the stride multiple; center false pads right and bottom") {
  plugin_test::PluginSet pm;
  auto lb = make_letterbox(pm, {{"auto", true}, {"stride", 32}}, 640);
  Sample s = painted_sample(300, 200, kRects);
  apply(*lb, s, 640);
  // 640x427, 213 mod 32 = 21 rows of padding: 10 above, 11 below.
  CHECK(s.image.cols == 640);
  CHECK(s.image.rows == 448);
  CHECK(s.geometry.pad_y == doctest::Approx(10.0));
  check_boxes_match_pixels(s, 1.5);

  auto corner = make_letterbox(pm, {{"center", false}}, 640);
  Sample c = painted_sample(300, 200, kRects);
  apply(*corner, c, 640);
  CHECK(c.image.size() == cv::Size(640, 640));
  CHECK(c.geometry.pad_x == 0.0);
  CHECK(c.geometry.pad_y == 0.0);
  CHECK_FALSE(is_pad(c.image, 426, 10));
  CHECK(is_pad(c.image, 427, 10));
  check_boxes_match_pixels(c, 1.5);
}

TEST_CASE("letterbox composes with the source's resize in Geometry") {
  plugin_test::PluginSet pm;
  auto lb = make_letterbox(pm, json::object(), 640);
  Sample s = painted_sample(300, 200, kRects);
  // As if the source had shrunk a 600x400 file by 0.5.
  s.geometry.original_width = 600;
  s.geometry.original_height = 400;
  s.geometry.ratio_x = s.geometry.ratio_y = 0.5;
  apply(*lb, s, 640);
  CHECK(s.geometry.original_width == 600);
  const auto& b = s.boxes[1];
  CHECK((b.x1 - s.geometry.pad_x) / s.geometry.ratio_x == doctest::Approx(2 * kRects[1].x).epsilon(1e-4));
  CHECK((b.y1 - s.geometry.pad_y) / s.geometry.ratio_y == doctest::Approx(2 * kRects[1].y).epsilon(1e-4));
}
