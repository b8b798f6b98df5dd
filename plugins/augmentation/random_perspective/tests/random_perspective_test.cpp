// random_perspective, loaded as a real plugin: over many seeds every surviving box sits on
// its warped painted pixels (IoU >= 0.9), boxes pushed out are dropped, a mosaic-sized
// input comes out at imgsz, same seed -> same output.
#include "augmentation/tests/painted_samples.h"

using namespace yoloflow;

namespace {
const std::vector<cv::Rect> kRects = {{20, 30, 90, 60}, {180, 40, 100, 120}, {60, 180, 120, 100}, {270, 250, 40, 50}};
}

TEST_CASE("random_perspective keeps boxes on their pixels through rotation, scale, shear, translation") {
  plugin_test::PluginSet pm;
  auto rp = plugin_test::make_augmentation(
      pm, "random_perspective",
      {{"degrees", 15.0}, {"translate", 0.2}, {"scale", 0.5}, {"shear", 3.0}}, 320);
  const Sample base = test::painted_sample(320, 320, kRects);
  test::FixedLoader loader({});
  std::size_t kept = 0, total = 0;
  for (std::uint64_t seed = 0; seed < 120; ++seed) {
    CAPTURE(seed);
    const Sample out = test::augmented(*rp, base, seed, 320, loader);
    REQUIRE(out.image.size() == cv::Size(320, 320));
    test::check_boxes_on_paint(out, 0.9, 2.5, 127, true);
    for (const auto& b : out.boxes) {
      CHECK(b.width() > 2);
      CHECK(b.height() > 2);
      CHECK(b.x1 >= 0);
      CHECK(b.x2 <= 320);
    }
    kept += out.boxes.size();
    total += base.boxes.size();
    CHECK(test::same_output(out, test::augmented(*rp, base, seed, 320, loader)));
  }
  // Translation and scale push some boxes (mostly the corner one) out of the image.
  CHECK(kept < total);
  CHECK(kept > total / 2);
}

TEST_CASE("random_perspective with perspective terms keeps boxes on their pixels") {
  plugin_test::PluginSet pm;
  auto rp = plugin_test::make_augmentation(pm, "random_perspective",
                                    {{"perspective", 0.0005}, {"scale", 0.3}, {"degrees", 5.0}}, 320);
  const Sample base = test::painted_sample(320, 320, kRects);
  test::FixedLoader loader({});
  for (std::uint64_t seed = 0; seed < 60; ++seed) {
    CAPTURE(seed);
    const Sample out = test::augmented(*rp, base, seed, 320, loader);
    test::check_boxes_on_paint(out, 0.9, 2.5, 127, true);
  }
}

TEST_CASE("random_perspective with all ranges 0 is the identity; a 2x input is centre-cropped") {
  plugin_test::PluginSet pm;
  auto id = plugin_test::make_augmentation(pm, "random_perspective", {{"translate", 0.0}, {"scale", 0.0}}, 320);
  const Sample base = test::painted_sample(320, 320, kRects);
  test::FixedLoader loader({});
  const Sample same = test::augmented(*id, base, 7, 320, loader);
  CHECK(test::same_output(same, base));

  // A 640x640 canvas (mosaic) maps to 320x320 around its centre, like Ultralytics' border.
  const Sample big = test::painted_sample(640, 640, {{100, 100, 60, 60}, {300, 300, 100, 40}});
  const Sample crop = test::augmented(*id, big, 7, 320, loader);
  REQUIRE(crop.image.size() == cv::Size(320, 320));
  REQUIRE(crop.boxes.size() == 1);  // the first box lies outside the centre crop
  CHECK(crop.boxes[0].x1 == doctest::Approx(300 - 160));
  CHECK(crop.boxes[0].y2 == doctest::Approx(340 - 160));
  test::check_boxes_on_paint(crop, 0.99, 0.01);
}
