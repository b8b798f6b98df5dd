// The geometry library on its own: Ultralytics' rules for which boxes survive a transform, and
// where mosaic tiles land on the 2*imgsz canvas.
#include <doctest/doctest.h>

#include "geometry/box_filter.h"
#include "geometry/mosaic_layout.h"

using namespace yoloflow;
using yoloflow::plugins::keep_box;
using yoloflow::plugins::place_boxes;
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
  CHECK(keep_box(before, box(10, 10, 60, 40)));        // 50x30 of 100x50: 30% of the area
  CHECK_FALSE(keep_box(before, box(10, 10, 12, 40)));  // 2 px wide: not more than 2
  CHECK_FALSE(keep_box(before, box(10, 10, 40, 12)));  // 2 px tall
  CHECK_FALSE(keep_box(before, box(0, 0, 20, 20)));    // 400 of 5000 px^2: 8% < 10%
  CHECK(keep_box(before, box(0, 0, 25, 25)));          // 625 of 5000: 12.5%
  const Box long_before = box(0, 0, 2000, 20);
  CHECK_FALSE(keep_box(long_before, box(0, 0, 1800, 3)));  // aspect 600 >= 100
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
  // Boxes move with the tile and are clipped to its visible part; one with nothing left goes.
  std::vector<Box> out;
  place_boxes({box(10, 10, 50, 60), box(790, 10, 800, 20)}, br, out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].x1 == doctest::Approx(710));
  CHECK(out[0].y1 == doctest::Approx(610));
  CHECK(out[0].x2 == doctest::Approx(750));
  CHECK(out[0].y2 == doctest::Approx(660));
}
