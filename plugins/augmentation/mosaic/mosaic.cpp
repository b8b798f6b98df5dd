// mosaic: Ultralytics' 2x2 Mosaic. With probability p, the sample and three others (drawn
// among the samples loaded just before it, or the whole source: `others`) are placed around a random centre (xc, yc), each drawn from
// [imgsz/2, 3*imgsz/2), on a 2*imgsz grey canvas: top-left, top-right, bottom-left,
// bottom-right, each cut where it crosses the canvas edge. Instances (boxes, polygons,
// keypoints) are shifted with their image, clipped to what of their tile stays on the canvas,
// and dropped when nothing of their box is left (plugins/augmentation/geometry/mosaic_layout.h,
// shared with mosaic_perspective). Masks and the image class describe one image, not a mosaic:
// the contract does not keep them.
// A random_perspective stage after it brings the canvas back to imgsz (its centre crop).
#include <opencv2/core.hpp>

#include "geometry/mosaic_layout.h"
#include "yoloflow/augmentation.h"
#include "yoloflow/error.h"
#include "yoloflow/pixel_plan.h"
#include "yoloflow/plugin.h"

namespace yoloflow::plugins {
namespace {

class Mosaic final : public Augmentation {
 public:
  static Schema schema() {
    Schema s;
    add_mosaic_params(s);
    s.add_int("pad_value", 114).range(0, 255).doc("Grey level of the canvas.");
    return s;
  }

  void configure(const Params& p, const StageContext& context) override {
    settings_ = read_mosaic_params(p);
    pad_value_ = static_cast<int>(p.get_int("pad_value"));
    where_ = context.node;
  }

  const char* plan_support() const override { return nullptr; }

  void apply(Sample& sample, AugmentContext& ctx) override {
    const int s = ctx.imgsz;
    const MosaicDraw d = draw_mosaic(ctx.rng, settings_, s, ctx, "mosaic '" + where_ + "'");
    if (!d.apply) return;
    // Planned: the four tiles are placed on a canvas that is described, not made.
    std::shared_ptr<PixelPlan> plan;
    cv::Mat canvas;
    if (ctx.plan_pixels) {
      plan = std::make_shared<PixelPlan>();
      plan->width = plan->height = 2 * s;
      plan->fill = static_cast<std::uint8_t>(pad_value_);
    } else {
      canvas = cv::Mat(2 * s, 2 * s, CV_8UC3, cv::Scalar(pad_value_, pad_value_, pad_value_));
    }
    Sample mosaic;
    Geometry geometry = sample.geometry;
    for (int i = 0; i < 4; ++i) {
      Sample other;
      if (i > 0) other = ctx.loader.load(d.others[i - 1]);
      const Sample& tile = i == 0 ? sample : other;
      if (tile.image.type() != CV_8UC3) {
        throw Error("mosaic '" + where_ + "': sample '" + tile.path + "' is not an 8-bit BGR image");
      }
      const TilePlacement t = place_tile(i, d.xc, d.yc, tile.image.cols, tile.image.rows, s);
      if (!t.canvas.empty()) {
        if (plan) {
          plan->tiles.push_back(ResizedTile{tile.image, t.tile, t.canvas});  // the same size: a copy
        } else {
          tile.image(t.tile).copyTo(canvas(t.canvas));
        }
      }
      if (i == 0) {
        geometry.pad_x += t.shift.x;
        geometry.pad_y += t.shift.y;
      }
      place_instances(tile, t, mosaic);
    }
    sample.image = canvas;
    sample.pixel_plan = std::move(plan);
    sample.boxes = std::move(mosaic.boxes);
    sample.polygons = std::move(mosaic.polygons);
    sample.keypoints = std::move(mosaic.keypoints);
    sample.masks.clear();
    sample.image_class = -1;
    sample.geometry = geometry;
  }

 private:
  MosaicSettings settings_;
  int pad_value_ = 114;
  std::string where_;
};

void register_mosaic(Registrar& r) {
  r.add_augmentation<Mosaic>(
      "mosaic", Mosaic::schema(),
      "Ultralytics' 2x2 mosaic: the sample and three others (by default among those loaded just "
      "before it, as Ultralytics' buffer) on a 2*imgsz canvas "
      "around a random centre; follow it with random_perspective.",
      keeps(Field::Boxes | Field::Polygons | Field::Keypoints));
}

}  // namespace
}  // namespace yoloflow::plugins

YOLOFLOW_PLUGIN("mosaic", "1.0.0", yoloflow::plugins::register_mosaic)
