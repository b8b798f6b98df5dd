#include "geometry/perspective_matrix.h"

#include <algorithm>
#include <cmath>

#include <opencv2/imgproc.hpp>

namespace yoloflow::plugins {

void add_perspective_params(Schema& s) {
  s.add_float("degrees", 0.0).range(0.0, 180.0).doc("Rotation drawn from +-degrees.");
  s.add_float("translate", 0.1).range(0.0, 0.9).doc(
      "Translation of the centre drawn from +-translate of the output size.");
  s.add_float("scale", 0.5).range(0.0, 0.95).doc("Scale drawn from 1 +- scale.");
  s.add_float("shear", 0.0).range(0.0, 89.0).doc("Shear angles (x and y) drawn from +-shear degrees.");
  s.add_float("perspective", 0.0).range(0.0, 0.001).doc(
      "Perspective terms drawn from +-perspective (0.0001 is already strong at 640).");
}

PerspectiveRanges read_perspective_params(const Params& p) {
  PerspectiveRanges r;
  r.degrees = p.get_float("degrees");
  r.translate = p.get_float("translate");
  r.scale = p.get_float("scale");
  r.shear = p.get_float("shear");
  r.perspective = p.get_float("perspective");
  return r;
}

PerspectiveDraw draw_perspective(Rng& rng, const PerspectiveRanges& r, int in_w, int in_h, int out_w, int out_h) {
  cv::Matx33d C = cv::Matx33d::eye();
  C(0, 2) = -in_w / 2.0;
  C(1, 2) = -in_h / 2.0;
  cv::Matx33d P = cv::Matx33d::eye();
  P(2, 0) = rng.uniform(-r.perspective, r.perspective);
  P(2, 1) = rng.uniform(-r.perspective, r.perspective);
  const double angle = rng.uniform(-r.degrees, r.degrees);
  PerspectiveDraw d;
  d.s = rng.uniform(1 - r.scale, 1 + r.scale);
  const cv::Mat rot = cv::getRotationMatrix2D(cv::Point2f(0, 0), angle, d.s);
  cv::Matx33d R = cv::Matx33d::eye();
  for (int i = 0; i < 2; ++i)
    for (int c = 0; c < 3; ++c) R(i, c) = rot.at<double>(i, c);
  cv::Matx33d S = cv::Matx33d::eye();
  S(0, 1) = std::tan(rng.uniform(-r.shear, r.shear) * CV_PI / 180.0);
  S(1, 0) = std::tan(rng.uniform(-r.shear, r.shear) * CV_PI / 180.0);
  cv::Matx33d T = cv::Matx33d::eye();
  T(0, 2) = rng.uniform(0.5 - r.translate, 0.5 + r.translate) * out_w;
  T(1, 2) = rng.uniform(0.5 - r.translate, 0.5 + r.translate) * out_h;
  d.M = T * S * R * P * C;
  d.projective = r.perspective > 0;
  return d;
}

PixelMap pixel_map(const PerspectiveDraw& d, int out_w, int out_h) {
  PixelMap map;
  map.M = d.M;
  map.projective = d.projective;
  map.size = cv::Size(out_w, out_h);
  map.scale = d.s;
  map.clip = cv::Rect2d(0, 0, out_w, out_h);
  return map;
}

void warp_geometry(Geometry& g, const PerspectiveDraw& d) {
  g.ratio_x *= d.s;
  g.ratio_y *= d.s;
  g.pad_x = g.pad_x * d.s + d.M(0, 2);
  g.pad_y = g.pad_y * d.s + d.M(1, 2);
}

}  // namespace yoloflow::plugins
