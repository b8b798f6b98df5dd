// random_perspective: Ultralytics' RandomPerspective. One 3x3 matrix
//   M = T * S * R * P * C
// (centre the input, perspective, rotation + scale, shear, translation into the output),
// drawn in that order from the sample's generator, warps the pixels (grey 114 outside)
// and every instance (move_instances, yoloflow/annotations.h): a box with a polygon becomes
// the extent of its moved polygon's points inside the output, one without the bounding box of
// its four moved corners, clipped to the output; keypoints and masks move with them. An
// instance is kept only if it passes Ultralytics' filter (sides > 2 px, area > 10% of the
// scaled original (1% with a polygon), aspect < 100).
//
// The output is imgsz x imgsz, or height x width when given (a rectangular training batch's
// shape: Ultralytics letterboxes to it before its RandomPerspective, whose output keeps that
// size). A 2*imgsz mosaic is therefore cropped around its centre as Ultralytics does with its
// mosaic border of -imgsz/2; an imgsz input keeps its size.
// Planned (AugmentContext::plan_pixels, perspective 0): the affine warp goes into the sample's
// PixelPlan, over the canvas its tiles make, for the training device to compose.
#include <opencv2/imgproc.hpp>

#include "geometry/perspective_matrix.h"
#include "yoloflow/augmentation.h"
#include "yoloflow/error.h"
#include "yoloflow/pixel_plan.h"
#include "yoloflow/plugin.h"

namespace yoloflow::plugins {
namespace {

class RandomPerspective final : public Augmentation {
 public:
  static Schema schema() {
    Schema s;
    add_perspective_params(s);
    s.add_int("pad_value", 114).range(0, 255).doc("Grey level where no input pixel lands.");
    s.add_int("height").range(1, 8192).doc(
        "Output height; absent: the epoch's imgsz. Rectangular training (the train sink's train_rect) gives "
        "each batch's shape through height and width.");
    s.add_int("width").range(1, 8192).doc("Output width; absent: the epoch's imgsz.");
    return s;
  }

  void configure(const Params& p, const StageContext&) override {
    ranges_ = read_perspective_params(p);
    pad_value_ = static_cast<int>(p.get_int("pad_value"));
    height_ = p.is_null("height") ? 0 : static_cast<int>(p.get_int("height"));
    width_ = p.is_null("width") ? 0 : static_cast<int>(p.get_int("width"));
  }

  const char* plan_support() const override {
    return ranges_.perspective != 0 ? "perspective is warped on the CPU only (perspective must be 0)" : nullptr;
  }

  void apply(Sample& sample, AugmentContext& ctx) override {
    const int out_w = width_ > 0 ? width_ : ctx.imgsz, out_h = height_ > 0 ? height_ : ctx.imgsz;
    const cv::Size in = image_size(sample);
    const PerspectiveDraw d = draw_perspective(ctx.rng, ranges_, in.width, in.height, out_w, out_h);
    if (ctx.plan_pixels) {
      plan_warp(sample, d, out_w, out_h);
      return;
    }
    cv::Mat out;
    const cv::Scalar pad(pad_value_, pad_value_, pad_value_);
    if (d.projective) {
      cv::warpPerspective(sample.image, out, cv::Mat(d.M), cv::Size(out_w, out_h), cv::INTER_LINEAR,
                          cv::BORDER_CONSTANT, pad);
    } else {
      const cv::Matx23d A(d.M(0, 0), d.M(0, 1), d.M(0, 2), d.M(1, 0), d.M(1, 1), d.M(1, 2));
      cv::warpAffine(sample.image, out, cv::Mat(A), cv::Size(out_w, out_h), cv::INTER_LINEAR,
                     cv::BORDER_CONSTANT, pad);
    }
    const InstanceFilter filter;
    move_instances(sample, pixel_map(d, out_w, out_h), &filter);
    sample.image = out;
    warp_geometry(sample.geometry, d);
  }

 private:
  // Planned: the warp of what the plan's tiles make, described (its instances move as above).
  void plan_warp(Sample& sample, const PerspectiveDraw& d, int out_w, int out_h) const {
    if (d.projective) throw Error("random_perspective: perspective is warped on the CPU only, not planned");
    PixelPlan& plan = plan_of(sample);
    if (plan.warped || plan.hsv || plan.flip_lr || plan.flip_ud) {
      throw Error("random_perspective: the sample's planned pixels are already warped, recoloured or flipped; a "
                  "planned warp comes right after the tiles (mosaic)");
    }
    plan.warped = true;
    plan.warp.matrix = cv::Matx23d(d.M(0, 0), d.M(0, 1), d.M(0, 2), d.M(1, 0), d.M(1, 1), d.M(1, 2));
    plan.warp.canvas_width = plan.width;
    plan.warp.canvas_height = plan.height;
    plan.warp.border = static_cast<std::uint8_t>(pad_value_);
    plan.width = out_w;
    plan.height = out_h;
    const InstanceFilter filter;
    move_instances(sample, pixel_map(d, out_w, out_h), &filter);
    warp_geometry(sample.geometry, d);
  }

  PerspectiveRanges ranges_;
  int pad_value_ = 114;
  int height_ = 0, width_ = 0;  // 0: imgsz
};

void register_random_perspective(Registrar& r) {
  r.add_augmentation<RandomPerspective>(
      "random_perspective", RandomPerspective::schema(),
      "Random rotation, scale, shear, translation and perspective into an imgsz x imgsz "
      "output (Ultralytics' RandomPerspective), with its box filter; polygons, keypoints and masks "
      "move with the pixels and boxes come from the moved polygons.",
      keeps(Field::Boxes | Field::Polygons | Field::Keypoints | Field::Masks | Field::ImageClass));
}

}  // namespace
}  // namespace yoloflow::plugins

YOLOFLOW_PLUGIN("random_perspective", "1.0.0", yoloflow::plugins::register_random_perspective)
