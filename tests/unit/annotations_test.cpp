// The SDK's annotation operations (yoloflow/annotations.h): every per-instance field moves,
// flips, is selected and appended together, and polygons give boxes as Ultralytics takes them.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include <opencv2/imgproc.hpp>

#include "yoloflow/annotations.h"
#include "yoloflow/error.h"

using namespace yoloflow;

namespace {

Box box(float x1, float y1, float x2, float y2, int cls = 0) {
  Box b;
  b.x1 = x1, b.y1 = y1, b.x2 = x2, b.y2 = y2, b.cls = cls;
  return b;
}

// A diamond touching the sides of (x1, y1, x2, y2).
Polygon diamond(float x1, float y1, float x2, float y2) {
  const float cx = 0.5f * (x1 + x2), cy = 0.5f * (y1 + y2);
  return {{cx, y1}, {x2, cy}, {cx, y2}, {x1, cy}};
}

PixelMap rotation(double degrees, cv::Point2d centre, cv::Size size) {
  const double a = degrees * CV_PI / 180.0, c = std::cos(a), s = std::sin(a);
  PixelMap m;
  m.M = cv::Matx33d(c, -s, centre.x - c * centre.x + s * centre.y, s, c, centre.y - s * centre.x - c * centre.y, 0, 0,
                    1);
  m.size = size;
  return m;
}

}  // namespace

TEST_CASE("annotations: a polygon resampled as Ultralytics keeps its vertices, closes on its first point and has n points") {
  const Polygon square = {{0, 0}, {10, 0}, {10, 10}, {0, 10}};
  const Polygon r = resample_polygon(square, 1000);
  REQUIRE(r.size() == 1000);
  CHECK(r.front() == cv::Point2f(0, 0));
  CHECK(r.back() == cv::Point2f(0, 0));  // the outline is closed: the first point ends it
  for (const auto& v : square) CHECK(std::count(r.begin(), r.end(), v) >= 1);
  // Points walk the perimeter in order: each step is short (40 units over ~1000 steps).
  for (std::size_t i = 1; i < r.size(); ++i) CHECK(cv::norm(r[i] - r[i - 1]) < 0.05);

  // Every polygon of an image gets the same count: 1000, or one more than the longest.
  Polygon long_one;
  for (int i = 0; i < 1200; ++i) {
    const double a = 2 * CV_PI * i / 1200;
    long_one.emplace_back(static_cast<float>(50 + 40 * std::cos(a)), static_cast<float>(50 + 40 * std::sin(a)));
  }
  std::vector<Polygon> polygons = {square, long_one, {}};
  resample_polygons(polygons);
  CHECK(polygons[0].size() == 1201);
  CHECK(polygons[1].size() == 1201);
  CHECK(polygons[2].empty());  // an instance without a polygon stays without
}

TEST_CASE("annotations: the box of a moved polygon is the extent of its points strictly inside the image") {
  // Inside: its extent.
  Box b = polygon_box(diamond(10, 20, 50, 60), 100, 100);
  CHECK(b.x1 == 10);
  CHECK(b.y1 == 20);
  CHECK(b.x2 == 50);
  CHECK(b.y2 == 60);
  // Crossing the right edge: only the points inside count (the diamond's right tip is out).
  b = polygon_box({{80, 50}, {120, 40}, {90, 60}}, 100, 100);
  CHECK(b.x1 == 80);
  CHECK(b.x2 == 90);
  // Beyond three sides at once: clipped to the image first, and points on the edge are not inside.
  b = polygon_box({{-10, -10}, {150, -5}, {50, 50}, {-20, 120}}, 100, 100);
  CHECK(b.x1 == 50);
  CHECK(b.y1 == 50);
  CHECK(b.x2 == 50);
  CHECK(b.y2 == 50);
  // Nothing inside: an empty box.
  b = polygon_box({{150, 150}, {160, 170}, {170, 150}}, 100, 100);
  CHECK(b.width() == 0);
  CHECK(b.height() == 0);
}

TEST_CASE("annotations: moving instances gives tight boxes from polygons, corner boxes without, and keypoints with them") {
  Sample s;
  s.image = cv::Mat(200, 200, CV_8UC3, cv::Scalar::all(0));
  s.boxes = {box(60, 60, 140, 140, 1), box(60, 60, 140, 140, 2)};
  s.polygons = {diamond(60, 60, 140, 140), {}};  // the second has no polygon
  s.keypoints = {{{100, 100, 2}}, {{190, 100, 2}}};
  move_instances(s, rotation(45, {100, 100}, {200, 200}), nullptr);
  REQUIRE(s.boxes.size() == 2);
  // The diamond turned by 45 degrees is a square of side 80 / sqrt(2) * ... its extent is the
  // rotated tips: +-40 * sqrt(2) / 2 * 2 = 56.57 around the centre on each axis.
  CHECK(s.boxes[0].x1 == doctest::Approx(100 - 40 * std::sqrt(0.5)).epsilon(1e-4));
  CHECK(s.boxes[0].x2 == doctest::Approx(100 + 40 * std::sqrt(0.5)).epsilon(1e-4));
  CHECK(s.boxes[0].cls == 1);
  // Without a polygon: the rotated corners' extent, 40 * sqrt(2) from the centre.
  CHECK(s.boxes[1].x1 == doctest::Approx(100 - 40 * std::sqrt(2.0)).epsilon(1e-4));
  CHECK(s.boxes[1].x2 == doctest::Approx(100 + 40 * std::sqrt(2.0)).epsilon(1e-4));
  CHECK(s.boxes[1].cls == 2);
  // The centre keypoint stays; the one at (190, 100) turns to (163.6, 163.6), inside.
  CHECK(s.keypoints[0][0].x == doctest::Approx(100));
  CHECK(s.keypoints[1][0].x == doctest::Approx(100 + 90 * std::sqrt(0.5)).epsilon(1e-4));
  CHECK(s.keypoints[1][0].visible == 2);
  CHECK(instance_problem(s).empty());

  // Moved out of the image, a keypoint becomes invisible and is clamped to the edge.
  PixelMap shift;
  shift.M = cv::Matx33d(1, 0, 50, 0, 1, 0, 0, 0, 1);
  shift.size = cv::Size(200, 200);
  move_instances(s, shift, nullptr);
  CHECK(s.keypoints[1][0].visible == 0);
  CHECK(s.keypoints[1][0].x == 200);
}

TEST_CASE("annotations: the filter keeps a hundredth of an outlined object and a tenth of a boxed one") {
  // Both instances keep about 4% of their area after a shift that pushes them out of the image.
  Sample s;
  s.image = cv::Mat(100, 100, CV_8UC3, cv::Scalar::all(0));
  s.boxes = {box(1, 1, 99, 99), box(1, 1, 99, 99)};
  const Polygon square = {{1, 1}, {99, 1}, {99, 99}, {1, 99}};
  s.polygons = {resample_polygon(square, 1000), {}};
  PixelMap m;
  m.M = cv::Matx33d(1, 0, -95, 0, 1, 0, 0, 0, 1);  // 4 px of width stay
  m.size = cv::Size(100, 100);
  const InstanceFilter filter;
  move_instances(s, m, &filter);
  REQUIRE(s.boxes.size() == 1);  // the boxed one (4% < 10%) is dropped, the outlined one (4% > 1%) kept
  CHECK(s.polygons.size() == 1);
  CHECK_FALSE(s.polygons[0].empty());
  CHECK(s.boxes[0].x2 == doctest::Approx(4));
  CHECK(s.boxes[0].x1 < 0.1f);
}

TEST_CASE("annotations: a left-right flip mirrors every field and reorders keypoints by flip_idx") {
  Sample s;
  s.image = cv::Mat(10, 100, CV_8UC3, cv::Scalar::all(0));
  s.boxes = {box(10, 2, 30, 8)};
  s.polygons = {diamond(10, 2, 30, 8)};
  s.keypoints = {{{20, 5, 2}, {15, 5, 2}, {25, 5, 1}}};  // centre, left, right
  cv::Mat mask = cv::Mat::zeros(10, 100, CV_8UC1);
  mask(cv::Rect(10, 2, 20, 6)).setTo(1);
  s.masks = {mask};
  flip_instances_lr(s, 100, {0, 2, 1});
  CHECK(s.boxes[0].x1 == 70);
  CHECK(s.boxes[0].x2 == 90);
  CHECK(s.polygons[0][1].x == 70);  // the right tip is now the left one
  // The left keypoint is the old right one, mirrored: still left of the right one.
  CHECK(s.keypoints[0][1].x == 75);
  CHECK(s.keypoints[0][1].visible == 1);
  CHECK(s.keypoints[0][2].x == 85);
  CHECK(cv::boundingRect(s.masks[0]) == cv::Rect(70, 2, 20, 6));
  // Keypoints without a usable flip_idx: refused, naming it.
  CHECK_THROWS_WITH_AS(flip_instances_lr(s, 100, {}), doctest::Contains("flip_idx"), Error);
  CHECK_THROWS_WITH_AS(flip_instances_lr(s, 100, {0, 1, 1}), doctest::Contains("not each index once"), Error);
}

TEST_CASE("annotations: selecting and appending instances keeps every field in step") {
  Sample a;
  a.image = cv::Mat(50, 50, CV_8UC3, cv::Scalar::all(0));
  a.boxes = {box(0, 0, 10, 10, 0), box(10, 10, 20, 20, 1), box(20, 20, 30, 30, 2)};
  a.polygons = {diamond(0, 0, 10, 10), diamond(10, 10, 20, 20), diamond(20, 20, 30, 30)};
  keep_instances(a, {true, false, true});
  REQUIRE(a.boxes.size() == 2);
  CHECK(a.boxes[1].cls == 2);
  CHECK(a.polygons[1][0].x == 25);

  // A box-only sample appended: its instance gets an empty polygon, so polygons stay one per box.
  Sample b;
  b.boxes = {box(1, 1, 5, 5, 3)};
  b.keypoints = {{{3, 3, 2}, {4, 4, 2}}};
  append_instance(a, b, 0);
  CHECK(a.boxes.size() == 3);
  CHECK(a.polygons.size() == 3);
  CHECK(a.polygons[2].empty());
  // Keypoints the first two lacked are there, invisible.
  REQUIRE(a.keypoints.size() == 3);
  CHECK(a.keypoints[0].size() == 2);
  CHECK(a.keypoints[0][0].visible == 0);
  CHECK(a.keypoints[2][1].x == 4);
  CHECK(instance_problem(a).empty());

  a.polygons.pop_back();
  CHECK(instance_problem(a) == "2 polygons for 3 boxes");
  CHECK(fields_of(a).has(Field::Polygons));
  remove_fields(a, Field::Boxes | Field::Keypoints);
  CHECK(a.polygons.empty());
  CHECK(fields_of(a) == (Field::Boxes | Field::Keypoints));
  CHECK((Field::Boxes | Field::Masks).names() == "boxes, masks");
}

TEST_CASE("annotations: an oriented box is the least rectangle around its corners") {
  // A 40 x 20 rectangle turned by 30 degrees about (100, 100).
  const double a = 30 * CV_PI / 180.0;
  Polygon corners;
  for (auto [dx, dy] : {std::pair{-20.0, -10.0}, {20.0, -10.0}, {20.0, 10.0}, {-20.0, 10.0}}) {
    corners.emplace_back(static_cast<float>(100 + dx * std::cos(a) - dy * std::sin(a)),
                         static_cast<float>(100 + dx * std::sin(a) + dy * std::cos(a)));
  }
  const OrientedBox o = oriented_box(corners);
  CHECK(o.cx == doctest::Approx(100).epsilon(1e-3));
  CHECK(o.cy == doctest::Approx(100).epsilon(1e-3));
  CHECK(std::max(o.w, o.h) == doctest::Approx(40).epsilon(1e-3));
  CHECK(std::min(o.w, o.h) == doctest::Approx(20).epsilon(1e-3));
}

TEST_CASE("annotations: a batch names its target arrays and says which it has when one is missing") {
  Batch b;
  CHECK(b.num_boxes() == 0);
  CHECK(b.boxes().shape == std::vector<std::int64_t>{0, 6});
  b.boxes() = TargetArray{{2, 6}, std::vector<float>(12, 0.5f)};
  CHECK(b.num_boxes() == 2);
  CHECK(b.boxes().row_size() == 6);
  CHECK(b.has_target(targets::kBoxes));
  CHECK_THROWS_WITH_AS(b.target(targets::kKeypoints), doctest::Contains("it has boxes"), Error);
}
