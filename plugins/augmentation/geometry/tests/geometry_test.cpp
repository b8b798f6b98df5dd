// The geometry library on its own: Ultralytics' rules for which boxes survive a transform, and
// where mosaic tiles land on the 2*imgsz canvas with their instances.
#include <doctest/doctest.h>

#include "geometry/mosaic_layout.h"
#include "yoloflow/annotations.h"

using namespace yoloflow;
using yoloflow::plugins::place_instances;
using yoloflow::plugins::place_tile;

namespace {
Box box(float x1, float y1, float x2, float y2) {
  Box b;
  b.x1 = x1;
  b.y1 = y1;
  b.x2 = x2;
  b.y2 = y2;
  return b;
}
}  // namespace

TEST_CASE("geometry: a box survives a transform only when it stays wider and taller than 2 px, keeps a tenth of its area and no extreme aspect") {
  const Box before = box(0, 0, 100, 50);
  CHECK(keep_box(before, box(10, 10, 60, 40), 0.1));        // 50x30 of 100x50: 30% of the area
  CHECK_FALSE(keep_box(before, box(10, 10, 12, 40), 0.1));  // 2 px wide: not more than 2
  CHECK_FALSE(keep_box(before, box(10, 10, 40, 12), 0.1));  // 2 px tall
  CHECK_FALSE(keep_box(before, box(0, 0, 20, 20), 0.1));    // 400 of 5000 px^2: 8% < 10%
  CHECK(keep_box(before, box(0, 0, 25, 25), 0.1));          // 625 of 5000: 12.5%
  // An outlined object keeps smaller remains (Ultralytics' 1% for instances with segments).
  CHECK(keep_box(before, box(0, 0, 20, 20), 0.01));
  const Box long_before = box(0, 0, 2000, 20);
  CHECK_FALSE(keep_box(long_before, box(0, 0, 1800, 3), 0.1));  // aspect 600 >= 100
}

TEST_CASE("geometry: mosaic tiles meet at the centre and only what falls off the canvas is cut") {
  const int imgsz = 640, xc = 700, yc = 600;
  // Top left: its bottom-right corner sits on the centre.
  const auto tl = place_tile(0, xc, yc, 500, 400, imgsz);
  CHECK(tl.canvas == cv::Rect(200, 200, 500, 400));
  CHECK(tl.tile == cv::Rect(0, 0, 500, 400));
  CHECK(tl.shift == cv::Point(200, 200));
  // Bottom right of a tile larger than what is left of the canvas: cut at the canvas' edge.
  const auto br = place_tile(3, xc, yc, 800, 900, imgsz);
  CHECK(br.canvas == cv::Rect(700, 600, 2 * imgsz - 700, 2 * imgsz - 600));
  CHECK(br.tile == cv::Rect(0, 0, 2 * imgsz - 700, 2 * imgsz - 600));
  // Instances move with the tile and are clipped to its visible part; one with nothing left
  // goes, its polygon and keypoints with it.
  Sample tile;
  tile.boxes = {box(10, 10, 50, 60), box(790, 10, 800, 20)};
  tile.polygons = {{{10, 10}, {50, 10}, {30, 60}}, {{790, 10}, {800, 20}, {795, 15}}};
  tile.keypoints = {{{30, 30, 2}, {10, 10, 2}}, {{795, 15, 2}, {790, 10, 2}}};
  Sample out;
  place_instances(tile, br, out);
  REQUIRE(out.boxes.size() == 1);
  CHECK(out.boxes[0].x1 == doctest::Approx(710));
  CHECK(out.boxes[0].y1 == doctest::Approx(610));
  CHECK(out.boxes[0].x2 == doctest::Approx(750));
  CHECK(out.boxes[0].y2 == doctest::Approx(660));
  REQUIRE(out.polygons.size() == 1);
  CHECK(out.polygons[0][2].x == doctest::Approx(730));
  CHECK(out.polygons[0][2].y == doctest::Approx(660));
  REQUIRE(out.keypoints.size() == 1);
  CHECK(out.keypoints[0][0].x == doctest::Approx(730));
  CHECK(out.keypoints[0][0].visible == 2);
  CHECK(instance_problem(out).empty());

  // A tile cut by the canvas edge: a polygon point beyond it is clamped onto it, a keypoint
  // beyond it becomes invisible.
  const auto tr = place_tile(1, xc, yc, 800, 400, imgsz);  // x from 700 to the edge at 1280
  Sample wide;
  wide.boxes = {box(500, 100, 700, 200)};
  wide.polygons = {{{500, 100}, {700, 150}, {600, 200}}};
  wide.keypoints = {{{650, 150, 2}, {560, 150, 2}}};
  Sample cut;
  place_instances(wide, tr, cut);
  REQUIRE(cut.boxes.size() == 1);
  CHECK(cut.boxes[0].x2 == doctest::Approx(1280));
  CHECK(cut.polygons[0][1].x == doctest::Approx(1280));
  CHECK(cut.keypoints[0][0].visible == 0);
  CHECK(cut.keypoints[0][0].x == doctest::Approx(1280));
  CHECK(cut.keypoints[0][1].visible == 2);
  CHECK(cut.keypoints[0][1].x == doctest::Approx(1260));
}
