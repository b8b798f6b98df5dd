// Multi-scale training's size draw (training/step/multi_scale.h): Ultralytics' range, multiples of the
// stride, every size of the range reached, and the same size for the same (seed, iteration).
#include <doctest/doctest.h>

#include <set>

#include "training/step/multi_scale.h"

using namespace yoloflow;

TEST_CASE("multi-scale sizes: 0.5x to 1.5x imgsz in multiples of 32, reproducible per iteration") {
  std::set<int> seen;
  for (std::int64_t it = 0; it < 2000; ++it) {
    const int size = core::multi_scale_size(640, 0.5, 32, 7, it);
    CHECK(size % 32 == 0);
    CHECK(size >= 320);
    CHECK(size <= 960);
    CHECK(core::multi_scale_size(640, 0.5, 32, 7, it) == size);  // ranks and resumed runs agree
    seen.insert(size);
  }
  CHECK(seen.size() == 21);  // 320, 352, ..., 960: all of them
  CHECK(*seen.rbegin() == core::largest_multi_scale_size(640, 0.5, 32));  // what auto batch profiles
  int differ = 0;
  for (std::int64_t it = 0; it < 50; ++it) differ += core::multi_scale_size(640, 0.5, 32, 8, it) != core::multi_scale_size(640, 0.5, 32, 7, it);
  CHECK(differ > 25);  // another seed, other sizes
  CHECK(core::multi_scale_size(640, 0.0, 32, 7, 3) == 640);  // off
  CHECK(core::multi_scale_size(64, 0.9, 32, 7, 3) >= 32);    // never below one stride
}
