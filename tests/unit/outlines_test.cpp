// A segmentation detection's outlines joined into the one polygon a label file holds.
#include <doctest/doctest.h>

#include <algorithm>

#include "training/predict/outlines.h"

using namespace yoloflow::core;

TEST_CASE("joined_polygon: one outline as it is; parts joined at their nearest points, every point kept") {
  CHECK(joined_polygon({}).empty());
  const std::vector<cv::Point2f> a = {{0, 0}, {10, 0}, {10, 10}, {0, 10}};
  CHECK(joined_polygon({a}) == a);
  const std::vector<cv::Point2f> b = {{30, 30}, {40, 30}, {40, 40}, {12, 12}};
  const auto j = joined_polygon({a, b});
  // a up to its point nearest b ({10, 10}), all of b from its nearest ({12, 12}) back to it, then
  // a again from {10, 10}: n_a + n_b + 2 points.
  REQUIRE(j.size() == a.size() + b.size() + 2);
  const std::vector<cv::Point2f> want = {{0, 0},   {10, 0},  {10, 10}, {12, 12}, {30, 30},
                                         {40, 30}, {40, 40}, {12, 12}, {10, 10}, {0, 10}};
  CHECK(j == want);
  for (const auto& p : b) CHECK(std::find(j.begin(), j.end(), p) != j.end());
  // Empty parts are skipped.
  CHECK(joined_polygon({{}, a, {}}) == a);
}
