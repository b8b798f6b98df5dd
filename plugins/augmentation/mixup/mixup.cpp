// mixup: Ultralytics' MixUp. With probability p, another sample drawn uniformly from the
// source is blended in: image = r * image + (1 - r) * other (rounded; Ultralytics
// truncates), r ~ Beta(32, 32) (about 0.5 +- 0.06), and the instances of both are kept,
// every field (masks included: both images have the same size). The image class describes one
// image, not a blend: the contract does not keep it.
// The other sample comes from the host as it reaches this stage: through the stages before
// mixup (the default chain: mosaic and random_perspective, as Ultralytics' pre-transform).
// Where it is not this sample's size (mixup placed before the crop) it is letterboxed
// (fitted, centred, grey 114 padding) to it, its instances with it.
// Planned (AugmentContext::plan_pixels): the same draws and instances, the blend written into the
// sample's plan (mix_in), the other sample planned through the stages before.
#include <algorithm>
#include <cmath>
#include <random>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "geometry/fit_sample.h"
#include "yoloflow/annotations.h"
#include "yoloflow/augmentation.h"
#include "yoloflow/error.h"
#include "yoloflow/pixel_plan.h"
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

  const char* plan_support() const override { return nullptr; }

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
    if (ctx.plan_pixels) {  // the same blend, written into the plan (the other sample comes planned)
      const cv::Size size = image_size(sample);
      fit_planned_sample(other, size.width, size.height);
      for (std::size_t i = 0; i < other.boxes.size(); ++i) append_instance(sample, other, i);
      mix_in(sample, other, /*paste=*/false, r, cv::Rect());
      sample.image_class = -1;
      return;
    }
    if (other.image.type() != CV_8UC3 || sample.image.type() != CV_8UC3) {
      throw Error("mixup '" + where_ + "': samples must be 8-bit BGR images");
    }
    fit_sample(other, sample.image.cols, sample.image.rows);
    cv::Mat blended;
    cv::addWeighted(sample.image, r, other.image, 1.0 - r, 0.0, blended);
    sample.image = blended;
    for (std::size_t i = 0; i < other.boxes.size(); ++i) append_instance(sample, other, i);
    sample.image_class = -1;
  }

 private:
  double p_ = 0.0, alpha_ = 32.0;
  std::string where_;
};

void register_mixup(Registrar& r) {
  r.add_augmentation<MixUp>(
      "mixup", MixUp::schema(),
      "Blends another random sample into this one with a Beta(32, 32) ratio, keeping both "
      "samples' instances (Ultralytics' MixUp).",
      keeps(Field::Boxes | Field::Polygons | Field::Keypoints | Field::Masks));
}

}  // namespace
}  // namespace yoloflow::plugins

YOLOFLOW_PLUGIN("mixup", "1.0.0", yoloflow::plugins::register_mixup)
