#include "training/eval/plot_canvas.h"

#include <algorithm>
#include <cmath>

#include <opencv2/imgproc.hpp>

namespace yoloflow::core {

cv::Scalar blues(double t) {
  t = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0);
  // From near-white (247, 251, 255 RGB) to dark blue (8, 48, 107 RGB), through a mid blue.
  const double r0 = 247, g0 = 251, b0 = 255, r1 = 66, g1 = 146, b1 = 198, r2 = 8, g2 = 48, b2 = 107;
  double r, g, b;
  if (t < 0.5) {
    const double u = t / 0.5;
    r = r0 + (r1 - r0) * u, g = g0 + (g1 - g0) * u, b = b0 + (b1 - b0) * u;
  } else {
    const double u = (t - 0.5) / 0.5;
    r = r1 + (r2 - r1) * u, g = g1 + (g2 - g1) * u, b = b1 + (b2 - b1) * u;
  }
  return cv::Scalar(b, g, r);
}

cv::Scalar line_colour(int i) {
  // Hues spread by the golden angle: neighbours in class order never look alike.
  const double hue = std::fmod(i * 137.508, 360.0) / 2.0;  // OpenCV's hue is 0..180
  cv::Mat hsv(1, 1, CV_8UC3, cv::Scalar(hue, 200, 210)), bgr;
  cv::cvtColor(hsv, bgr, cv::COLOR_HSV2BGR);
  const auto p = bgr.at<cv::Vec3b>(0, 0);
  return cv::Scalar(p[0], p[1], p[2]);
}

void put_centred(cv::Mat& canvas, const std::string& text, cv::Point centre, double scale, cv::Scalar colour) {
  int base = 0;
  const cv::Size s = cv::getTextSize(text, cv::FONT_HERSHEY_SIMPLEX, scale, 1, &base);
  cv::putText(canvas, text, {centre.x - s.width / 2, centre.y + s.height / 2}, cv::FONT_HERSHEY_SIMPLEX, scale, colour,
              1, cv::LINE_AA);
}

void put_right_aligned(cv::Mat& canvas, const std::string& text, cv::Point right_middle, double scale,
                       cv::Scalar colour) {
  int base = 0;
  const cv::Size s = cv::getTextSize(text, cv::FONT_HERSHEY_SIMPLEX, scale, 1, &base);
  cv::putText(canvas, text, {right_middle.x - s.width, right_middle.y + s.height / 2}, cv::FONT_HERSHEY_SIMPLEX, scale,
              colour, 1, cv::LINE_AA);
}

void put_vertical(cv::Mat& canvas, const std::string& text, cv::Point top_middle, double scale, cv::Scalar colour) {
  int base = 0;
  const cv::Size s = cv::getTextSize(text, cv::FONT_HERSHEY_SIMPLEX, scale, 1, &base);
  // Drawn flat on a patch of the canvas's background turned back, then turned upright onto it.
  cv::Mat flat(s.height + base + 2, s.width + 2, canvas.type(), cv::Scalar(255, 255, 255));
  cv::putText(flat, text, {1, s.height + 1}, cv::FONT_HERSHEY_SIMPLEX, scale, colour, 1, cv::LINE_AA);
  cv::Mat upright;
  cv::rotate(flat, upright, cv::ROTATE_90_COUNTERCLOCKWISE);
  cv::Rect dst(top_middle.x - upright.cols / 2, top_middle.y, upright.cols, upright.rows);
  const cv::Rect clipped = dst & cv::Rect(0, 0, canvas.cols, canvas.rows);
  if (clipped.empty()) return;
  // Only the text's pixels, so that a white patch never covers what is under it.
  cv::Mat mask;
  cv::inRange(upright, cv::Scalar(250, 250, 250), cv::Scalar(255, 255, 255), mask);
  cv::bitwise_not(mask, mask);
  const cv::Rect src(clipped.x - dst.x, clipped.y - dst.y, clipped.width, clipped.height);
  upright(src).copyTo(canvas(clipped), mask(src));
}

}  // namespace yoloflow::core
