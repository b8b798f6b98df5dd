// cutmix: Ultralytics' CutMix for detection. With probability p, another sample drawn
// uniformly from the source lends one rectangle of its pixels, pasted at the same place.
// The rectangle: num_areas candidates are drawn, each with a side ratio sqrt(1 - lam),
// lam ~ Beta(beta, beta), and a uniform centre, clipped to the image; only the candidates that
// overlap none of this sample's boxes may be chosen, so its boxes never lose pixels and are
// kept as they are. The other sample's instances whose box has at least a tenth of its area
// inside the rectangle (a hundredth when this sample carries polygons, as Ultralytics) come
// along, clipped to it: boxes and polygon points clamped, keypoints outside made invisible.
// Where no candidate is free, or no instance of the other sample would come along, the sample
// is left as it is. Masks and the image class describe whole images: the contract does not
// keep them.
// The other sample comes from the host as it reaches this stage (through mosaic and
// random_perspective in the default chain, as Ultralytics' pre-transform; cutmix goes after
// mixup, where Ultralytics has it). Where it is not this sample's size it is letterboxed
// (fitted, centred, grey 114 padding) to it first, so that "the same place" exists.
// Planned (AugmentContext::plan_pixels): the same draws and instances, the paste written into the
// sample's plan (mix_in), the other sample planned through the stages before.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

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

struct Area {
  int x1 = 0, y1 = 0, x2 = 0, y2 = 0;
};

double overlap(const Area& a, const Box& b) {
  const double w = std::min<double>(a.x2, b.x2) - std::max<double>(a.x1, b.x1);
  const double h = std::min<double>(a.y2, b.y2) - std::max<double>(a.y1, b.y1);
  return std::max(0.0, w) * std::max(0.0, h);
}

class CutMix final : public Augmentation {
 public:
  static Schema schema() {
    Schema s;
    s.add_float("p", 0.0).range(0.0, 1.0).doc("Probability of pasting a rectangle of another sample.");
    s.add_float("beta", 1.0).greater_than(0.0).doc(
        "Beta(beta, beta) draws lam; a candidate rectangle's sides are sqrt(1 - lam) of the image's.");
    s.add_int("num_areas", 3).range(1, 100).doc(
        "Candidate rectangles drawn; one that overlaps none of this sample's boxes is pasted.");
    return s;
  }

  void configure(const Params& p, const StageContext& context) override {
    p_ = p.get_float("p");
    beta_ = p.get_float("beta");
    num_areas_ = static_cast<int>(p.get_int("num_areas"));
    where_ = context.node;
  }

  const char* plan_support() const override { return nullptr; }

  void apply(Sample& sample, AugmentContext& ctx) override {
    if (!(ctx.rng.uniform() < p_)) return;
    const std::size_t n = ctx.loader.size();
    if (n == 0) throw Error("cutmix '" + where_ + "': the source has no samples to paste from");
    const auto j = static_cast<std::size_t>(ctx.rng.integer(0, static_cast<std::int64_t>(n) - 1));
    if (!ctx.plan_pixels && sample.image.type() != CV_8UC3) {
      throw Error("cutmix '" + where_ + "': samples must be 8-bit BGR images");
    }
    const cv::Size size = image_size(sample);
    const int W = size.width, H = size.height;

    // The rectangles depend on this sample alone, so they are drawn before the other sample is
    // loaded: that load runs the stages before this one, and is saved when no rectangle is
    // free. All candidates are drawn before one is picked, so the generator advances the same
    // way whichever of them turn out free.
    std::vector<Area> free;
    for (int i = 0; i < num_areas_; ++i) {
      const Area a = random_area(W, H, ctx.rng);
      const bool covers_a_box = std::any_of(sample.boxes.begin(), sample.boxes.end(),
                                            [&](const Box& b) { return overlap(a, b) > 0.0; });
      if (!covers_a_box) free.push_back(a);
    }
    if (free.empty()) return;
    const Area area = free[static_cast<std::size_t>(ctx.rng.integer(0, static_cast<std::int64_t>(free.size()) - 1))];

    Sample other = ctx.loader.load(j);
    if (ctx.plan_pixels) {
      fit_planned_sample(other, W, H);
    } else {
      if (other.image.type() != CV_8UC3) throw Error("cutmix '" + where_ + "': samples must be 8-bit BGR images");
      fit_sample(other, W, H);
    }

    // A box comes along when at least a tenth of its area is inside (Ultralytics' threshold
    // for boxes without segments; a hundredth with them): a sliver would label pixels that
    // barely show the object. The share is taken in single precision, as Ultralytics takes it,
    // so that a box exactly a tenth inside is kept there and here alike.
    const float min_share = sample.polygons.empty() ? 0.1f : 0.01f;
    const float ax1 = static_cast<float>(area.x1), ax2 = static_cast<float>(area.x2);
    const float ay1 = static_cast<float>(area.y1), ay2 = static_cast<float>(area.y2);
    Sample pasted;
    for (std::size_t i = 0; i < other.boxes.size(); ++i) {
      const Box& b = other.boxes[i];
      const float own = std::max(0.0f, b.width()) * std::max(0.0f, b.height());
      if (static_cast<float>(overlap(area, b)) / (own + 1e-7f) < min_share) continue;
      const std::size_t k = pasted.boxes.size();
      append_instance(pasted, other, i);
      Box& c = pasted.boxes[k];
      c.x1 = std::clamp(c.x1, ax1, ax2);
      c.x2 = std::clamp(c.x2, ax1, ax2);
      c.y1 = std::clamp(c.y1, ay1, ay2);
      c.y2 = std::clamp(c.y2, ay1, ay2);
      if (!pasted.polygons.empty()) {
        for (auto& q : pasted.polygons[k]) q.x = std::clamp(q.x, ax1, ax2), q.y = std::clamp(q.y, ay1, ay2);
      }
      if (!pasted.keypoints.empty() && !other.keypoints.empty()) {
        for (auto& q : pasted.keypoints[k]) {
          if (q.x < ax1 || q.x > ax2 || q.y < ay1 || q.y > ay2) q.visible = 0;
          q.x = std::clamp(q.x, ax1, ax2), q.y = std::clamp(q.y, ay1, ay2);
        }
      }
    }
    // Nothing to label in the rectangle: Ultralytics leaves the image alone then too.
    if (pasted.boxes.empty()) return;

    const cv::Rect r(area.x1, area.y1, area.x2 - area.x1, area.y2 - area.y1);
    if (ctx.plan_pixels) {  // the same paste, written into the plan
      mix_in(sample, other, /*paste=*/true, 0.0, r);
    } else {
      paste(sample, other, r);
    }
    sample.masks.clear();
    pasted.masks.clear();
    sample.image_class = -1;
    for (std::size_t i = 0; i < pasted.boxes.size(); ++i) append_instance(sample, pasted, i);
  }

 private:
  static void paste(Sample& sample, const Sample& other, const cv::Rect& r) {
    // Pasted in place only when the sample owns its pixels: another holder of them (a cache of
    // decoded images) must not see the patch.
    const bool owned = sample.image.u != nullptr && sample.image.u->refcount == 1;
    if (!owned) sample.image = sample.image.clone();
    other.image(r).copyTo(sample.image(r));
  }

  // One candidate: sides of sqrt(1 - lam) times the image's (truncated), lam ~ Beta(beta,
  // beta), centred on a uniform pixel, clipped to the image (so it may be smaller there).
  Area random_area(int W, int H, Rng& rng) const {
    // Beta(b, b) as X / (X + Y) with X, Y ~ Gamma(b, 1).
    std::gamma_distribution<double> gamma(beta_, 1.0);
    const double gx = gamma(rng.engine()), gy = gamma(rng.engine());
    // A very small beta can underflow both draws to 0; Beta(b, b) then lies at 0 or 1, each
    // end as likely.
    const double lam = gx + gy > 0.0 ? gx / (gx + gy) : (rng.uniform() < 0.5 ? 0.0 : 1.0);
    const double side = std::sqrt(std::max(0.0, 1.0 - lam));
    const int half_w = static_cast<int>(W * side) / 2, half_h = static_cast<int>(H * side) / 2;
    const int cx = static_cast<int>(rng.integer(0, W - 1)), cy = static_cast<int>(rng.integer(0, H - 1));
    return Area{std::clamp(cx - half_w, 0, W), std::clamp(cy - half_h, 0, H), std::clamp(cx + half_w, 0, W),
                std::clamp(cy + half_h, 0, H)};
  }

  double p_ = 0.0, beta_ = 1.0;
  int num_areas_ = 3;
  std::string where_;
};

void register_cutmix(Registrar& r) {
  r.add_augmentation<CutMix>(
      "cutmix", CutMix::schema(),
      "Pastes a random rectangle of another sample where it covers none of this sample's boxes, "
      "with the other sample's instances mostly inside it, clipped (Ultralytics' CutMix).",
      keeps(Field::Boxes | Field::Polygons | Field::Keypoints));
}

}  // namespace
}  // namespace yoloflow::plugins

YOLOFLOW_PLUGIN("cutmix", "1.0.0", yoloflow::plugins::register_cutmix)
