// mosaic: Ultralytics' 2x2 Mosaic. With probability p, the sample and three others drawn
// uniformly from the source are placed around a random centre (xc, yc), each drawn from
// [imgsz/2, 3*imgsz/2), on a 2*imgsz grey canvas: top-left, top-right, bottom-left,
// bottom-right, each cut where it crosses the canvas edge. Boxes are shifted with their
// image, clipped to the canvas, and dropped when nothing of them is left.
// A random_perspective stage after it brings the canvas back to imgsz (its centre crop).
#include <algorithm>

#include <opencv2/core.hpp>

#include "yoloflow/augmentation.h"
#include "yoloflow/error.h"
#include "yoloflow/plugin.h"

namespace yoloflow::plugins {
namespace {

class Mosaic final : public Augmentation {
 public:
  static Schema schema() {
    Schema s;
    s.add_float("p", 1.0).range(0.0, 1.0).doc(
        "Probability of a mosaic (schedule it to 0 for the last epochs: Ultralytics' close_mosaic).");
    s.add_int("pad_value", 114).range(0, 255).doc("Grey level of the canvas.");
    return s;
  }

  void configure(const Params& p, const StageContext& context) override {
    p_ = p.get_float("p");
    pad_value_ = static_cast<int>(p.get_int("pad_value"));
    where_ = context.node;
  }

  void apply(Sample& sample, AugmentContext& ctx) override {
    if (!(ctx.rng.uniform() < p_)) return;
    const std::size_t n = ctx.loader.size();
    if (n == 0) throw Error("mosaic '" + where_ + "': the source has no samples to combine");
    const int s = ctx.imgsz;
    // Centre first (y then x, as Ultralytics), then the three other images.
    const int yc = static_cast<int>(ctx.rng.uniform(s / 2, 2 * s - s / 2));
    const int xc = static_cast<int>(ctx.rng.uniform(s / 2, 2 * s - s / 2));
    std::size_t others[3];
    for (auto& o : others) o = static_cast<std::size_t>(ctx.rng.integer(0, static_cast<std::int64_t>(n) - 1));

    cv::Mat canvas(2 * s, 2 * s, CV_8UC3, cv::Scalar(pad_value_, pad_value_, pad_value_));
    std::vector<Box> boxes;
    Geometry geometry = sample.geometry;
    for (int i = 0; i < 4; ++i) {
      Sample other;
      if (i > 0) other = ctx.loader.load(others[i - 1]);
      const Sample& tile = i == 0 ? sample : other;
      if (tile.image.type() != CV_8UC3) {
        throw Error("mosaic '" + where_ + "': sample '" + tile.path + "' is not an 8-bit BGR image");
      }
      const int h = tile.image.rows, w = tile.image.cols;
      int x1a, y1a, x2a, y2a, x1b, y1b, x2b, y2b;  // a: canvas, b: tile
      if (i == 0) {  // top left
        x1a = std::max(xc - w, 0), y1a = std::max(yc - h, 0), x2a = xc, y2a = yc;
        x1b = w - (x2a - x1a), y1b = h - (y2a - y1a), x2b = w, y2b = h;
      } else if (i == 1) {  // top right
        x1a = xc, y1a = std::max(yc - h, 0), x2a = std::min(xc + w, 2 * s), y2a = yc;
        x1b = 0, y1b = h - (y2a - y1a), x2b = std::min(w, x2a - x1a), y2b = h;
      } else if (i == 2) {  // bottom left
        x1a = std::max(xc - w, 0), y1a = yc, x2a = xc, y2a = std::min(2 * s, yc + h);
        x1b = w - (x2a - x1a), y1b = 0, x2b = w, y2b = std::min(y2a - y1a, h);
      } else {  // bottom right
        x1a = xc, y1a = yc, x2a = std::min(xc + w, 2 * s), y2a = std::min(2 * s, yc + h);
        x1b = 0, y1b = 0, x2b = std::min(w, x2a - x1a), y2b = std::min(y2a - y1a, h);
      }
      if (x2a > x1a && y2a > y1a) {
        tile.image(cv::Rect(x1b, y1b, x2b - x1b, y2b - y1b))
            .copyTo(canvas(cv::Rect(x1a, y1a, x2a - x1a, y2a - y1a)));
      }
      const float padw = static_cast<float>(x1a - x1b), padh = static_cast<float>(y1a - y1b);
      if (i == 0) {
        geometry.pad_x += padw;
        geometry.pad_y += padh;
      }
      // Tiles only ever lose what falls off the canvas, so clipping to it is exact.
      for (Box b : tile.boxes) {
        b.x1 = std::clamp(b.x1 + padw, 0.0f, 2.0f * s);
        b.x2 = std::clamp(b.x2 + padw, 0.0f, 2.0f * s);
        b.y1 = std::clamp(b.y1 + padh, 0.0f, 2.0f * s);
        b.y2 = std::clamp(b.y2 + padh, 0.0f, 2.0f * s);
        if (b.x2 > b.x1 && b.y2 > b.y1) boxes.push_back(b);
      }
    }
    sample.image = canvas;
    sample.boxes = std::move(boxes);
    sample.geometry = geometry;
  }

 private:
  double p_ = 1.0;
  int pad_value_ = 114;
  std::string where_;
};

void register_mosaic(Registrar& r) {
  r.add_augmentation<Mosaic>(
      "mosaic", Mosaic::schema(),
      "Ultralytics' 2x2 mosaic: the sample and three random others on a 2*imgsz canvas "
      "around a random centre; follow it with random_perspective.");
}

}  // namespace
}  // namespace yoloflow::plugins

YOLOFLOW_PLUGIN("mosaic", "1.0.0", yoloflow::plugins::register_mosaic)
