#include "geometry/fit_sample.h"

#include <algorithm>
#include <cmath>

#include <opencv2/imgproc.hpp>

#include <string>

#include "yoloflow/annotations.h"
#include "yoloflow/error.h"
#include "yoloflow/pixel_plan.h"

namespace yoloflow::plugins {

namespace {

// Where a w x h image lands, letterboxed into width x height.
cv::Rect fitted_rect(int w, int h, int width, int height) {
  const double k = std::min(static_cast<double>(width) / w, static_cast<double>(height) / h);
  const int nw = std::max(1, std::min(width, static_cast<int>(std::lround(w * k))));
  const int nh = std::max(1, std::min(height, static_cast<int>(std::lround(h * k))));
  return {(width - nw) / 2, (height - nh) / 2, nw, nh};
}

}  // namespace

void fit_planned_sample(Sample& other, int width, int height) {
  PixelPlan& p = plan_of(other);
  const int w = p.width, h = p.height;
  if (w == width && h == height) return;
  const cv::Rect whole(0, 0, w, h);
  if (p.tiles.size() != 1 || p.tiles[0].to != whole || p.warped || !p.mixes.empty() || p.hsv || p.flip_lr ||
      p.flip_ud) {
    throw Error("a planned " + std::to_string(w) + "x" + std::to_string(h) + " sample made by earlier stages cannot be " +
                "fitted to " + std::to_string(width) + "x" + std::to_string(height) + " in its plan");
  }
  const cv::Rect r = fitted_rect(w, h, width, height);
  // cv::resize of the tile's part into the fitted rectangle, grey around it: fit_sample's pixels.
  p.tiles[0].to = r;
  p.width = width;
  p.height = height;
  p.fill = 114;
  scale_instances(other, static_cast<double>(r.width) / w, static_cast<double>(r.height) / h, r.x, r.y,
                  cv::Size(width, height));
}

void fit_sample(Sample& other, int width, int height) {
  const int w = other.image.cols, h = other.image.rows;
  if (w == width && h == height) return;
  const cv::Rect fit = fitted_rect(w, h, width, height);
  const int nw = fit.width, nh = fit.height, left = fit.x, top = fit.y;
  cv::Mat fitted(height, width, CV_8UC3, cv::Scalar(114, 114, 114));
  if (nw == w && nh == h) {
    other.image.copyTo(fitted(cv::Rect(left, top, nw, nh)));
  } else {
    cv::resize(other.image, fitted(cv::Rect(left, top, nw, nh)), cv::Size(nw, nh), 0, 0, cv::INTER_LINEAR);
  }
  const double sx = static_cast<double>(nw) / w, sy = static_cast<double>(nh) / h;
  scale_instances(other, sx, sy, left, top, cv::Size(width, height));
  other.image = fitted;
}

}  // namespace yoloflow::plugins
