// mixup: Ultralytics' MixUp. With probability p, another sample drawn uniformly from the
// source is blended in: image = r * image + (1 - r) * other (rounded; Ultralytics
// truncates), r ~ Beta(32, 32) (about 0.5 +- 0.06), and the boxes of both are kept.
// The other sample comes from the host as it reaches this stage: through the stages before
// mixup (the default chain: mosaic and random_perspective, as Ultralytics' pre-transform).
// Where it is not this sample's size (mixup placed before the crop) it is letterboxed
// (fitted, centred, grey 114 padding) to it, its boxes with it.
#include <algorithm>
#include <cmath>
#include <random>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "yoloflow/augmentation.h"
#include "yoloflow/error.h"
#include "yoloflow/plugin.h"

namespace yoloflow::plugins {
namespace {

class MixUp final : public Augmentation {
 public:
  static Schema schema() {
    Schema s;
    s.add_float("p", 0.0).range(0.0, 1.0).doc("Probability of blending in another sample.");
    s.add_float("alpha", 32.0).greater_than(0.0).doc("Beta(alpha, alpha) draws the blend ratio.");
    return s;
  }

  void configure(const Params& p, const StageContext& context) override {
    p_ = p.get_float("p");
    alpha_ = p.get_float("alpha");
    where_ = context.node;
  }

  void apply(Sample& sample, AugmentContext& ctx) override {
    if (!(ctx.rng.uniform() < p_)) return;
    const std::size_t n = ctx.loader.size();
    if (n == 0) throw Error("mixup '" + where_ + "': the source has no samples to blend in");
    const auto j = static_cast<std::size_t>(ctx.rng.integer(0, static_cast<std::int64_t>(n) - 1));
    // Beta(a, a) as X / (X + Y) with X, Y ~ Gamma(a, 1).
    std::gamma_distribution<double> gamma(alpha_, 1.0);
    const double gx = gamma(ctx.rng.engine()), gy = gamma(ctx.rng.engine());
    const double r = gx / (gx + gy);

    Sample other = ctx.loader.load(j);
    if (other.image.type() != CV_8UC3 || sample.image.type() != CV_8UC3) {
      throw Error("mixup '" + where_ + "': samples must be 8-bit BGR images");
    }
    const int W = sample.image.cols, H = sample.image.rows;
    const int w = other.image.cols, h = other.image.rows;
    const double k = std::min(static_cast<double>(W) / w, static_cast<double>(H) / h);
    const int nw = std::max(1, std::min(W, static_cast<int>(std::lround(w * k))));
    const int nh = std::max(1, std::min(H, static_cast<int>(std::lround(h * k))));
    const int left = (W - nw) / 2, top = (H - nh) / 2;
    cv::Mat fitted(H, W, CV_8UC3, cv::Scalar(114, 114, 114));
    if (nw == w && nh == h) {
      other.image.copyTo(fitted(cv::Rect(left, top, nw, nh)));
    } else {
      cv::resize(other.image, fitted(cv::Rect(left, top, nw, nh)), cv::Size(nw, nh), 0, 0, cv::INTER_LINEAR);
    }
    const double sx = static_cast<double>(nw) / w, sy = static_cast<double>(nh) / h;
    cv::Mat blended;
    cv::addWeighted(sample.image, r, fitted, 1.0 - r, 0.0, blended);
    sample.image = blended;
    for (Box b : other.boxes) {
      b.x1 = static_cast<float>(b.x1 * sx + left);
      b.x2 = static_cast<float>(b.x2 * sx + left);
      b.y1 = static_cast<float>(b.y1 * sy + top);
      b.y2 = static_cast<float>(b.y2 * sy + top);
      sample.boxes.push_back(b);
    }
  }

 private:
  double p_ = 0.0, alpha_ = 32.0;
  std::string where_;
};

void register_mixup(Registrar& r) {
  r.add_augmentation<MixUp>(
      "mixup", MixUp::schema(),
      "Blends another random sample into this one with a Beta(32, 32) ratio, keeping both "
      "samples' boxes (Ultralytics' MixUp).");
}

}  // namespace
}  // namespace yoloflow::plugins

YOLOFLOW_PLUGIN("mixup", "1.0.0", yoloflow::plugins::register_mixup)
