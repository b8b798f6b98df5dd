// letterbox: fits an image into size x size (or height x width) keeping its aspect ratio and pads the rest,
// with Ultralytics' LetterBox rules (scaleup, auto/stride, center, pad value 114).
// Boxes move with the pixels using the scale actually applied on each axis (the rounded
// new size over the old), so they stay exact to the pixel; Geometry composes so
// predictions map back to the original file.
// Planned (AugmentContext::plan_pixels): the resize and the padding become the sample's
// PixelPlan (one tile, the whole image resized into its place; the pad value elsewhere), for the
// training device to compose; it comes before any other planned pixel work.
#include <algorithm>
#include <cmath>

#include <opencv2/imgproc.hpp>

#include "yoloflow/annotations.h"
#include "yoloflow/augmentation.h"
#include "yoloflow/error.h"
#include "yoloflow/pixel_plan.h"
#include "yoloflow/plugin.h"

namespace yoloflow::plugins {
namespace {

class Letterbox final : public Augmentation {
 public:
  static Schema schema() {
    Schema s;
    s.add_int("size").range(1, 8192).doc("Output size (square); absent: the epoch's imgsz.");
    s.add_int("height").range(1, 8192).doc(
        "Output height, for a rectangular output (validation's rectangular batches); absent: `size`.");
    s.add_int("width").range(1, 8192).doc("Output width, for a rectangular output; absent: `size`.");
    s.add_bool("scaleup", true).doc("Enlarge images smaller than the output; false only shrinks.");
    s.add_bool("auto", false).doc(
        "Minimal rectangle: pad only up to the next multiple of `stride` instead of the full "
        "square (rectangular inference).");
    s.add_int("stride", 32).range(1, 1024).doc("Padding multiple for `auto`.");
    s.add_bool("center", true).doc("Pad on both sides (true) or only right and bottom.");
    s.add_int("pad_value", 114).range(0, 255).doc("Grey level of the padding.");
    return s;
  }

  void configure(const Params& p, const StageContext& context) override {
    const int size = p.is_null("size") ? context.imgsz : static_cast<int>(p.get_int("size"));
    height_ = p.is_null("height") ? size : static_cast<int>(p.get_int("height"));
    width_ = p.is_null("width") ? size : static_cast<int>(p.get_int("width"));
    scaleup_ = p.get_bool("scaleup");
    auto_ = p.get_bool("auto");
    stride_ = static_cast<int>(p.get_int("stride"));
    center_ = p.get_bool("center");
    pad_value_ = static_cast<int>(p.get_int("pad_value"));
    where_ = context.node;
  }

  const char* plan_support() const override { return nullptr; }

  void apply(Sample& sample, AugmentContext& ctx) override {
    if (sample.pixel_plan) {
      throw Error("letterbox '" + where_ + "': sample '" + sample.path + "' already has planned pixels; a planned "
                  "letterbox comes right after the source (augment_on workers makes this chain's pixels on the CPU)");
    }
    if (sample.image.empty()) {
      throw Error("letterbox '" + where_ + "': sample '" + sample.path + "' has no image");
    }
    const int h = sample.image.rows, w = sample.image.cols;
    double r = std::min(static_cast<double>(height_) / h, static_cast<double>(width_) / w);
    if (!scaleup_) r = std::min(r, 1.0);
    // Python's round() (ties to even), as Ultralytics computes the unpadded size.
    const int new_w = std::max(1, static_cast<int>(std::nearbyint(w * r)));
    const int new_h = std::max(1, static_cast<int>(std::nearbyint(h * r)));
    double dw = width_ - new_w, dh = height_ - new_h;
    if (auto_) {
      dw = std::fmod(dw, stride_);
      dh = std::fmod(dh, stride_);
    }
    int left = 0, right = 0, top = 0, bottom = 0;
    if (center_) {
      dw /= 2;
      dh /= 2;
      // +-0.1 splits an odd padding one pixel more to the right/bottom, like Ultralytics.
      left = static_cast<int>(std::lround(dw - 0.1));
      right = static_cast<int>(std::lround(dw + 0.1));
      top = static_cast<int>(std::lround(dh - 0.1));
      bottom = static_cast<int>(std::lround(dh + 0.1));
    } else {
      right = static_cast<int>(std::lround(dw));
      bottom = static_cast<int>(std::lround(dh));
    }
    const cv::Size out_size(left + new_w + right, top + new_h + bottom);
    if (ctx.plan_pixels) {
      // The decoded image as one tile (plan_of refuses what is not 8-bit BGR), resized into its
      // place as below; the padding is the plan's fill.
      PixelPlan& plan = plan_of(sample);
      plan.tiles[0].to = cv::Rect(left, top, new_w, new_h);
      plan.width = out_size.width;
      plan.height = out_size.height;
      plan.fill = static_cast<std::uint8_t>(pad_value_);
    } else {
      cv::Mat resized;
      if (new_w != w || new_h != h) {
        cv::resize(sample.image, resized, cv::Size(new_w, new_h), 0, 0, cv::INTER_LINEAR);
      } else {
        resized = sample.image;
      }
      cv::Mat out;
      cv::copyMakeBorder(resized, out, top, bottom, left, right, cv::BORDER_CONSTANT,
                         cv::Scalar(pad_value_, pad_value_, pad_value_));
      sample.image = out;
    }
    const double sx = static_cast<double>(new_w) / w, sy = static_cast<double>(new_h) / h;
    scale_instances(sample, sx, sy, left, top, out_size);
    // current = original * ratio + pad, composed with this step's scale and offset.
    Geometry& g = sample.geometry;
    if (g.original_width == 0 || g.original_height == 0) {
      g.original_width = w;
      g.original_height = h;
    }
    g.ratio_x *= sx;
    g.ratio_y *= sy;
    g.pad_x = g.pad_x * sx + left;
    g.pad_y = g.pad_y * sy + top;
  }

 private:
  int height_ = 640, width_ = 640, stride_ = 32, pad_value_ = 114;
  bool scaleup_ = true, auto_ = false, center_ = true;
  std::string where_;
};

void register_letterbox(Registrar& r) {
  r.add_augmentation<Letterbox>(
      "letterbox", Letterbox::schema(),
      "Resizes keeping the aspect ratio to fit the output size and pads with grey "
      "(Ultralytics' LetterBox); every instance field and the geometry follow the pixels exactly. "
      "Plans its pixels for augment_on device.",
      keeps(Field::Boxes | Field::Polygons | Field::Keypoints | Field::Masks | Field::ImageClass));
}

}  // namespace
}  // namespace yoloflow::plugins

YOLOFLOW_PLUGIN("letterbox", "1.0.0", yoloflow::plugins::register_letterbox)
