#include "geometry/fit_sample.h"

#include <algorithm>
#include <cmath>

#include <opencv2/imgproc.hpp>

#include "yoloflow/annotations.h"

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
  scale_instances(other, sx, sy, left, top, cv::Size(width, height));
  other.image = fitted;
}

}  // namespace yoloflow::plugins
