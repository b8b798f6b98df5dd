// The rules of yolo_dataset's decode_reduced: which reduction a JPEG gets, and how the size of
// its full decode is told from the reduced one (EXIF may have turned it a quarter turn).
#include <doctest/doctest.h>

#include "source/yolo_dataset/image_files.h"
#include "source/yolo_dataset/reduced_decode.h"

using namespace yoloflow::plugins::yolo;

TEST_CASE("decode_reduced: the largest of 1/8, 1/4, 1/2 whose decode is still at least the resized size") {
  CHECK(jpeg_reduction(1600, 1200, {320, 240}) == 4);   // 400x300 >= 320x240; 1/8 would be 200x150
  CHECK(jpeg_reduction(5120, 3840, {640, 480}) == 8);   // 640x480, exactly the resized size
  CHECK(jpeg_reduction(1280, 960, {640, 480}) == 2);
  CHECK(jpeg_reduction(1279, 959, {640, 480}) == 2);    // 640x480 at 1/2 (libjpeg rounds up) ...
  CHECK(jpeg_reduction(1278, 958, {640, 480}) == 1);    // ... but 639x479 is too small: full decode
  CHECK(jpeg_reduction(640, 426, {640, 426}) == 1);     // not shrunk
  CHECK(jpeg_reduction(0, 0, {640, 480}) == 1);         // size unknown
}

TEST_CASE("decode_reduced: the full decode's size from the reduced one, upright or turned; too square to tell is nothing") {
  // 4000x3000 stored; at 1/4 libjpeg gives 1000x750, EXIF-turned 750x1000.
  CHECK(full_size_of({1000, 750}, 4000, 3000, 4) == cv::Size(4000, 3000));
  CHECK(full_size_of({750, 1000}, 4000, 3000, 4) == cv::Size(3000, 4000));
  CHECK(full_size_of({1001, 750}, 4001, 3000, 4) == cv::Size(4001, 3000));  // sides round up
  CHECK_FALSE(full_size_of({900, 750}, 4000, 3000, 4).has_value());          // not this image's decode
  CHECK_FALSE(full_size_of({500, 500}, 2000, 1998, 4).has_value());          // 500x500 either way
  CHECK(has_jpeg_extension("/d/images/a.JPG"));
  CHECK(has_jpeg_extension("b.jpeg"));
  CHECK_FALSE(has_jpeg_extension("c.png"));
  CHECK_FALSE(has_jpeg_extension("jpg"));
}
