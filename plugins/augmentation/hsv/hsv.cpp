// hsv: Ultralytics' RandomHSV. Three gains r = 1 + uniform(-1, 1) * (hsv_h, hsv_s, hsv_v)
// applied through lookup tables in OpenCV's 8-bit HSV (hue 0..179 wraps, saturation and
// value clip at 255). Pixels only: boxes do not move.
#include <algorithm>
#include <cmath>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "yoloflow/augmentation.h"
#include "yoloflow/plugin.h"

namespace yoloflow::plugins {
namespace {

class Hsv final : public Augmentation {
 public:
  static Schema schema() {
    Schema s;
    s.add_float("hsv_h", 0.015).range(0.0, 1.0).doc("Hue gain: hue is multiplied by 1 +- hsv_h.");
    s.add_float("hsv_s", 0.7).range(0.0, 1.0).doc("Saturation gain: multiplied by 1 +- hsv_s.");
    s.add_float("hsv_v", 0.4).range(0.0, 1.0).doc("Value (brightness) gain: multiplied by 1 +- hsv_v.");
    return s;
  }

  void configure(const Params& p, const StageContext&) override {
    gains_[0] = p.get_float("hsv_h");
    gains_[1] = p.get_float("hsv_s");
    gains_[2] = p.get_float("hsv_v");
  }

  void apply(Sample& s, AugmentContext& ctx) override {
    if (gains_[0] == 0 && gains_[1] == 0 && gains_[2] == 0) return;
    double r[3];
    for (int c = 0; c < 3; ++c) r[c] = ctx.rng.uniform(-1.0, 1.0) * gains_[c] + 1.0;
    cv::Mat lut(1, 256, CV_8UC3);
    for (int x = 0; x < 256; ++x) {
      auto& v = lut.at<cv::Vec3b>(0, x);
      v[0] = static_cast<uchar>(static_cast<int>(std::fmod(x * r[0], 180.0)));
      v[1] = static_cast<uchar>(std::clamp(x * r[1], 0.0, 255.0));
      v[2] = static_cast<uchar>(std::clamp(x * r[2], 0.0, 255.0));
    }
    cv::Mat hsv;
    cv::cvtColor(s.image, hsv, cv::COLOR_BGR2HSV);
    cv::LUT(hsv, lut, hsv);
    cv::Mat out;
    cv::cvtColor(hsv, out, cv::COLOR_HSV2BGR);
    s.image = out;
  }

 private:
  double gains_[3] = {0.015, 0.7, 0.4};
};

void register_hsv(Registrar& r) {
  r.add_augmentation<Hsv>("hsv", Hsv::schema(),
                          "Random hue, saturation and value gains (Ultralytics' RandomHSV); "
                          "boxes unchanged.");
}

}  // namespace
}  // namespace yoloflow::plugins

YOLOFLOW_PLUGIN("hsv", "1.0.0", yoloflow::plugins::register_hsv)
