#pragma once
// Test support for augmentation plugins: samples with filled rectangles of known colours
// painted exactly under their boxes, and the checks that every output box still sits on
// its painted pixels.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "support/paths.h"
#include "support/plugin_set.h"
#include "yoloflow/augmentation.h"
#include "yoloflow/error.h"
#include "yoloflow/testing.h"

namespace yoloflow::test {

// Pure colours far apart from each other, from black and from the grey 114 padding.
inline const std::vector<cv::Scalar>& paint_colours() {
  static const std::vector<cv::Scalar> c = {
      {0, 0, 255}, {0, 255, 0}, {255, 0, 0}, {0, 255, 255}, {255, 0, 255}, {255, 255, 0}, {255, 255, 255}};
  return c;
}

// A black w x h image with rect i painted in colour (first_colour + i), box class = colour.
inline Sample painted_sample(int w, int h, const std::vector<cv::Rect>& rects, int first_colour = 0,
                             std::size_t index = 0) {
  Sample s;
  s.index = index;
  s.path = "painted" + std::to_string(index) + ".png";
  s.image = cv::Mat(h, w, CV_8UC3, cv::Scalar(0, 0, 0));
  for (std::size_t i = 0; i < rects.size(); ++i) {
    const int cls = first_colour + static_cast<int>(i);
    cv::rectangle(s.image, rects[i], paint_colours()[static_cast<std::size_t>(cls)], cv::FILLED);
    const auto& r = rects[i];
    s.boxes.push_back(Box{static_cast<float>(r.x), static_cast<float>(r.y),
                          static_cast<float>(r.x + r.width), static_cast<float>(r.y + r.height), cls});
  }
  s.geometry.original_width = w;
  s.geometry.original_height = h;
  return s;
}

// Serves copies of fixed samples to mosaic and mixup (the SDK's test harness).
using FixedLoader = testing::SampleList;

// Bounding rectangle of the pixels within `window` (grown by `margin`) whose colour is
// within `tol` of `colour` on every channel; empty when there are none.
inline cv::Rect painted_extent(const cv::Mat& image, const cv::Scalar& colour, const Box& window,
                               int margin = 4, double tol = 127) {
  const cv::Rect bounds(0, 0, image.cols, image.rows);
  const cv::Rect win = cv::Rect(cv::Point(static_cast<int>(std::floor(window.x1)) - margin,
                                          static_cast<int>(std::floor(window.y1)) - margin),
                                cv::Point(static_cast<int>(std::ceil(window.x2)) + margin,
                                          static_cast<int>(std::ceil(window.y2)) + margin)) &
                       bounds;
  if (win.area() == 0) return {};
  cv::Mat mask;
  cv::inRange(image(win), colour - cv::Scalar(tol, tol, tol), colour + cv::Scalar(tol, tol, tol), mask);
  const cv::Rect r = cv::boundingRect(mask);
  return r.area() ? r + win.tl() : cv::Rect();
}

inline double iou(const Box& b, const cv::Rect& r) {
  const double ix = std::max(0.0, std::min<double>(b.x2, r.x + r.width) - std::max<double>(b.x1, r.x));
  const double iy = std::max(0.0, std::min<double>(b.y2, r.y + r.height) - std::max<double>(b.y1, r.y));
  const double inter = ix * iy;
  const double uni = b.width() * b.height() + static_cast<double>(r.area()) - inter;
  return uni > 0 ? inter / uni : 0.0;
}

// Every box lies on its colour's painted pixels: IoU >= min_iou, edges within max_edge px.
// With rotation, shear or perspective, a box cut by the image border is the clipped bounding
// box of the transformed corners (Ultralytics' rule), larger than the visible paint when the
// extreme corner left the image: `loose_at_border` then only requires the paint inside it.
// The default colour tolerance counts a pixel when it is at least half its colour, so
// edges blended by interpolation land where the true edge is.
inline void check_boxes_on_paint(const Sample& s, double min_iou = 0.9, double max_edge = 2.0,
                                 double tol = 127, bool loose_at_border = false) {
  for (const auto& b : s.boxes) {
    CAPTURE(b.cls);
    CAPTURE(b.x1);
    CAPTURE(b.y1);
    CAPTURE(b.x2);
    CAPTURE(b.y2);
    REQUIRE(b.cls >= 0);
    REQUIRE(b.cls < static_cast<int>(paint_colours().size()));
    const cv::Rect r = painted_extent(s.image, paint_colours()[static_cast<std::size_t>(b.cls)], b, 4, tol);
    CAPTURE(r);
    REQUIRE(r.area() > 0);
    const bool at_border = b.x1 <= 0.01f || b.y1 <= 0.01f || b.x2 >= s.image.cols - 0.01f ||
                           b.y2 >= s.image.rows - 0.01f;
    if (loose_at_border && at_border) {
      CHECK(r.x >= b.x1 - max_edge);
      CHECK(r.y >= b.y1 - max_edge);
      CHECK(r.x + r.width <= b.x2 + max_edge);
      CHECK(r.y + r.height <= b.y2 + max_edge);
      continue;
    }
    // Thin boxes (a sliver left at an edge) are judged by their edges only.
    if (std::min(b.width(), b.height()) >= 20) CHECK(iou(b, r) >= min_iou);
    CHECK(std::abs(b.x1 - r.x) <= max_edge);
    CHECK(std::abs(b.y1 - r.y) <= max_edge);
    CHECK(std::abs(b.x2 - (r.x + r.width)) <= max_edge);
    CHECK(std::abs(b.y2 - (r.y + r.height)) <= max_edge);
  }
}

// Runs `aug` on a copy of `s` with a generator seeded by `seed`.
using testing::augmented;

inline bool same_output(const Sample& a, const Sample& b) {
  if (a.image.size() != b.image.size() || a.boxes.size() != b.boxes.size()) return false;
  if (cv::norm(a.image, b.image, cv::NORM_INF) != 0) return false;
  for (std::size_t i = 0; i < a.boxes.size(); ++i) {
    const auto &x = a.boxes[i], &y = b.boxes[i];
    if (x.x1 != y.x1 || x.y1 != y.y1 || x.x2 != y.x2 || x.y2 != y.y2 || x.cls != y.cls) return false;
  }
  return true;
}

}  // namespace yoloflow::test
