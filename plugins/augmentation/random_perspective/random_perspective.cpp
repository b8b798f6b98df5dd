// random_perspective: Ultralytics' RandomPerspective. One 3x3 matrix
//   M = T * S * R * P * C
// (centre the input, perspective, rotation + scale, shear, translation into the output),
// drawn in that order from the sample's generator, warps the pixels (grey 114 outside)
// and the four corners of every box; a box becomes the bounding box of its corners,
// clipped to the output, and is kept only if it passes Ultralytics' filter (sides > 2 px,
// area > 10% of the scaled original, aspect < 100).
//
// The output is imgsz x imgsz. A 2*imgsz mosaic is therefore cropped around its centre as
// Ultralytics does with its mosaic border of -imgsz/2; an imgsz input keeps its size.
#include <algorithm>
#include <cmath>

#include <opencv2/imgproc.hpp>

#include "box_filter.h"
#include "yoloflow/augmentation.h"
#include "yoloflow/plugin.h"

namespace yoloflow::plugins {
namespace {

class RandomPerspective final : public Augmentation {
 public:
  static Schema schema() {
    Schema s;
    s.add_float("degrees", 0.0).range(0.0, 180.0).doc("Rotation drawn from +-degrees.");
    s.add_float("translate", 0.1).range(0.0, 0.9).doc(
        "Translation of the centre drawn from +-translate of the output size.");
    s.add_float("scale", 0.5).range(0.0, 0.95).doc("Scale drawn from 1 +- scale.");
    s.add_float("shear", 0.0).range(0.0, 89.0).doc("Shear angles (x and y) drawn from +-shear degrees.");
    s.add_float("perspective", 0.0).range(0.0, 0.001).doc(
        "Perspective terms drawn from +-perspective (0.0001 is already strong at 640).");
    s.add_int("pad_value", 114).range(0, 255).doc("Grey level where no input pixel lands.");
    return s;
  }

  void configure(const Params& p, const StageContext&) override {
    degrees_ = p.get_float("degrees");
    translate_ = p.get_float("translate");
    scale_ = p.get_float("scale");
    shear_ = p.get_float("shear");
    perspective_ = p.get_float("perspective");
    pad_value_ = static_cast<int>(p.get_int("pad_value"));
  }

  void apply(Sample& sample, AugmentContext& ctx) override {
    const int out_w = ctx.imgsz, out_h = ctx.imgsz;
    cv::Matx33d C = cv::Matx33d::eye();
    C(0, 2) = -sample.image.cols / 2.0;
    C(1, 2) = -sample.image.rows / 2.0;
    cv::Matx33d P = cv::Matx33d::eye();
    P(2, 0) = ctx.rng.uniform(-perspective_, perspective_);
    P(2, 1) = ctx.rng.uniform(-perspective_, perspective_);
    const double angle = ctx.rng.uniform(-degrees_, degrees_);
    const double s = ctx.rng.uniform(1 - scale_, 1 + scale_);
    const cv::Mat rot = cv::getRotationMatrix2D(cv::Point2f(0, 0), angle, s);
    cv::Matx33d R = cv::Matx33d::eye();
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 3; ++c) R(r, c) = rot.at<double>(r, c);
    cv::Matx33d S = cv::Matx33d::eye();
    S(0, 1) = std::tan(ctx.rng.uniform(-shear_, shear_) * CV_PI / 180.0);
    S(1, 0) = std::tan(ctx.rng.uniform(-shear_, shear_) * CV_PI / 180.0);
    cv::Matx33d T = cv::Matx33d::eye();
    T(0, 2) = ctx.rng.uniform(0.5 - translate_, 0.5 + translate_) * out_w;
    T(1, 2) = ctx.rng.uniform(0.5 - translate_, 0.5 + translate_) * out_h;
    const cv::Matx33d M = T * S * R * P * C;

    cv::Mat out;
    const cv::Scalar pad(pad_value_, pad_value_, pad_value_);
    if (perspective_ > 0) {
      cv::warpPerspective(sample.image, out, cv::Mat(M), cv::Size(out_w, out_h), cv::INTER_LINEAR,
                          cv::BORDER_CONSTANT, pad);
    } else {
      const cv::Matx23d A(M(0, 0), M(0, 1), M(0, 2), M(1, 0), M(1, 1), M(1, 2));
      cv::warpAffine(sample.image, out, cv::Mat(A), cv::Size(out_w, out_h), cv::INTER_LINEAR,
                     cv::BORDER_CONSTANT, pad);
    }

    std::vector<Box> kept;
    kept.reserve(sample.boxes.size());
    for (const Box& b : sample.boxes) {
      const double xs[4] = {b.x1, b.x2, b.x1, b.x2}, ys[4] = {b.y1, b.y2, b.y2, b.y1};
      double x1 = INFINITY, y1 = INFINITY, x2 = -INFINITY, y2 = -INFINITY;
      for (int k = 0; k < 4; ++k) {
        const cv::Vec3d p = M * cv::Vec3d(xs[k], ys[k], 1.0);
        const double x = perspective_ > 0 ? p[0] / p[2] : p[0];
        const double y = perspective_ > 0 ? p[1] / p[2] : p[1];
        x1 = std::min(x1, x);
        x2 = std::max(x2, x);
        y1 = std::min(y1, y);
        y2 = std::max(y2, y);
      }
      Box nb{static_cast<float>(std::clamp(x1, 0.0, double(out_w))),
             static_cast<float>(std::clamp(y1, 0.0, double(out_h))),
             static_cast<float>(std::clamp(x2, 0.0, double(out_w))),
             static_cast<float>(std::clamp(y2, 0.0, double(out_h))), b.cls};
      const Box scaled{0, 0, static_cast<float>(b.width() * s), static_cast<float>(b.height() * s), b.cls};
      if (keep_box(scaled, nb)) kept.push_back(nb);
    }
    sample.boxes = std::move(kept);
    sample.image = out;
    // Geometry stays exact only for scale + translation; rotation, shear and perspective
    // have no (ratio, pad) form, so it then records the scale and the centre's move.
    Geometry& g = sample.geometry;
    g.ratio_x *= s;
    g.ratio_y *= s;
    g.pad_x = g.pad_x * s + M(0, 2);
    g.pad_y = g.pad_y * s + M(1, 2);
  }

 private:
  double degrees_ = 0, translate_ = 0.1, scale_ = 0.5, shear_ = 0, perspective_ = 0;
  int pad_value_ = 114;
};

void register_random_perspective(Registrar& r) {
  r.add_augmentation<RandomPerspective>(
      "random_perspective", RandomPerspective::schema(),
      "Random rotation, scale, shear, translation and perspective into an imgsz x imgsz "
      "output (Ultralytics' RandomPerspective), with its box filter.");
}

}  // namespace
}  // namespace yoloflow::plugins

YOLOFLOW_PLUGIN("random_perspective", "1.0.0", yoloflow::plugins::register_random_perspective)
