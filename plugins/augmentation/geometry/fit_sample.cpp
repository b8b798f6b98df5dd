#include "geometry/fit_sample.h"

#include <algorithm>
#include <cmath>

#include <opencv2/imgproc.hpp>

namespace yoloflow::plugins {

void fit_sample(Sample& other, int width, int height) {
  const int w = other.image.cols, h = other.image.rows;
  if (w == width && h == height) return;
  const double k = std::min(static_cast<double>(width) / w, static_cast<double>(height) / h);
  const int nw = std::max(1, std::min(width, static_cast<int>(std::lround(w * k))));
  const int nh = std::max(1, std::min(height, static_cast<int>(std::lround(h * k))));
  const int left = (width - nw) / 2, top = (height - nh) / 2;
  cv::Mat fitted(height, width, CV_8UC3, cv::Scalar(114, 114, 114));
  if (nw == w && nh == h) {
    other.image.copyTo(fitted(cv::Rect(left, top, nw, nh)));
  } else {
    cv::resize(other.image, fitted(cv::Rect(left, top, nw, nh)), cv::Size(nw, nh), 0, 0, cv::INTER_LINEAR);
  }
  const double sx = static_cast<double>(nw) / w, sy = static_cast<double>(nh) / h;
  for (Box& b : other.boxes) {
    b.x1 = static_cast<float>(b.x1 * sx + left);
    b.x2 = static_cast<float>(b.x2 * sx + left);
    b.y1 = static_cast<float>(b.y1 * sy + top);
    b.y2 = static_cast<float>(b.y2 * sy + top);
  }
  other.image = fitted;
}

}  // namespace yoloflow::plugins
