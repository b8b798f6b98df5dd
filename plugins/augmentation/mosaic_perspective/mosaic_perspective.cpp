// mosaic_perspective: mosaic followed by random_perspective, in one pass. It draws the same
// random quantities in the same order as the two stages (the mosaic's p, centre and three
// other samples, then the perspective matrix M for the 2*imgsz canvas), so the same
// generator gives the same draws, but never builds the 2*imgsz canvas: each tile's visible
// part is warped straight into the imgsz x imgsz output (grey elsewhere), limited to the
// output rectangle it lands in.
//
// - Scale + translation only (degrees, shear and perspective 0: the default): cv::resize of
//   the tile's visible part into the output pixels it covers. The ends of that span are
//   rounded to whole pixels, so a tile's scale and offset differ from M's by under a pixel
//   over its span; its boxes follow the mapping its pixels took.
// - Otherwise: cv::warpAffine (warpPerspective) of the part, grown by one replicated pixel
//   so tiles meet without a grey seam, with BORDER_TRANSPARENT into the bounding rectangle
//   of where it lands; boxes are mapped with M as random_perspective does.
// - Planned (AugmentContext::plan_pixels, scale + translation only): the same resize of each
//   tile, written into the sample's PixelPlan for the training device to compose.
// Instances are first clipped to their tile's visible part (as mosaic does), then moved as
// random_perspective moves them (boxes from moved polygons where there are polygons, keypoints
// with them) and filtered with Ultralytics' rule (sides > 2 px, area > 10% of the box scaled
// by the drawn scale (1% with a polygon), aspect < 100). Without a mosaic (probability 1 - p)
// it is random_perspective on the sample alone.
#include <algorithm>
#include <cmath>

#include <opencv2/imgproc.hpp>

#include "geometry/mosaic_layout.h"
#include "geometry/perspective_matrix.h"
#include "yoloflow/augmentation.h"
#include "yoloflow/error.h"
#include "yoloflow/pixel_plan.h"
#include "yoloflow/plugin.h"

namespace yoloflow::plugins {
namespace {

// One axis of a scale + translation: canvas span [c0, c1) onto output [0, out), in pixel-edge
// coordinates (warpAffine's pixel-centre map x -> k*x + t moves edges by t + (1 - k)/2).
struct Span {
  int src0 = 0, src1 = 0, dst0 = 0, dst1 = 0;
};
bool visible_span(double k, double t, int c0, int c1, int out, Span& sp) {
  const double off = t + 0.5 * (1.0 - k);
  sp.dst0 = static_cast<int>(std::lround(std::max(0.0, k * c0 + off)));
  sp.dst1 = static_cast<int>(std::lround(std::min(static_cast<double>(out), k * c1 + off)));
  if (sp.dst1 <= sp.dst0) return false;
  sp.src0 = std::clamp(static_cast<int>(std::lround((sp.dst0 - off) / k)), c0, c1);
  sp.src1 = std::clamp(static_cast<int>(std::lround((sp.dst1 - off) / k)), c0, c1);
  return sp.src1 > sp.src0;
}

class MosaicPerspective final : public Augmentation {
 public:
  static Schema schema() {
    Schema s;
    add_mosaic_params(s);
    add_perspective_params(s);
    s.add_int("pad_value", 114).range(0, 255).doc("Grey level where no input pixel lands.");
    return s;
  }

  void configure(const Params& p, const StageContext& context) override {
    settings_ = read_mosaic_params(p);
    ranges_ = read_perspective_params(p);
    pad_value_ = static_cast<int>(p.get_int("pad_value"));
    where_ = "mosaic_perspective '" + context.node + "'";
  }

  const char* plan_support() const override {
    if (ranges_.degrees != 0 || ranges_.shear != 0 || ranges_.perspective != 0) {
      return "rotation, shear and perspective are warped on the CPU only (degrees, shear and perspective must be 0)";
    }
    return nullptr;
  }

  void apply(Sample& sample, AugmentContext& ctx) override {
    const int s = ctx.imgsz;
    const MosaicDraw md = draw_mosaic(ctx.rng, settings_, s, ctx, where_);
    Sample others[3];
    const Sample* tiles[4] = {&sample, nullptr, nullptr, nullptr};
    TilePlacement placements[4];
    int n_tiles = 1, in_w = sample.image.cols, in_h = sample.image.rows;
    Geometry geometry = sample.geometry;
    if (md.apply) {
      n_tiles = 4;
      in_w = in_h = 2 * s;
      for (int i = 1; i < 4; ++i) {
        others[i - 1] = ctx.loader.load(md.others[i - 1]);
        tiles[i] = &others[i - 1];
      }
    }
    for (int i = 0; i < n_tiles; ++i) {
      const cv::Mat& image = tiles[i]->image;
      if (image.type() != CV_8UC3) {
        throw Error(where_ + ": sample '" + tiles[i]->path + "' is not an 8-bit BGR image");
      }
      if (md.apply) {
        placements[i] = place_tile(i, md.xc, md.yc, image.cols, image.rows, s);
      } else {
        placements[i].canvas = placements[i].tile = cv::Rect(0, 0, image.cols, image.rows);
      }
    }
    if (md.apply) {
      geometry.pad_x += placements[0].shift.x;
      geometry.pad_y += placements[0].shift.y;
    }
    const PerspectiveDraw d = draw_perspective(ctx.rng, ranges_, in_w, in_h, s, s);

    if (ctx.plan_pixels && !d.scale_translate_only()) {
      throw Error(where_ + ": rotation, shear and perspective are warped on the CPU only, not planned");
    }
    // Planned: the tiles' resizes are described, not done (the plan reads the decoded images).
    std::shared_ptr<PixelPlan> plan;
    cv::Mat out;
    if (ctx.plan_pixels) {
      plan = std::make_shared<PixelPlan>();
      plan->width = plan->height = s;
      plan->fill = static_cast<std::uint8_t>(pad_value_);
    } else {
      out = cv::Mat(s, s, CV_8UC3, cv::Scalar(pad_value_, pad_value_, pad_value_));
    }
    const cv::Size out_size(s, s);
    Sample moved;  // the instances of every tile, in the output
    for (int i = 0; i < n_tiles; ++i) {
      const TilePlacement& t = placements[i];
      if (t.canvas.empty()) continue;
      Sample placed;
      place_instances(*tiles[i], t, placed);
      if (plan) {
        resize_tile(t, d, out_size, placed, [&](const cv::Rect& src, const cv::Rect& dst) {
          plan->tiles.push_back(ResizedTile{tiles[i]->image, src, dst});
        });
      } else if (d.scale_translate_only()) {
        resize_tile(t, d, out_size, placed, [&](const cv::Rect& src, const cv::Rect& dst) {
          cv::Mat roi = out(dst);
          cv::resize(tiles[i]->image(src), roi, dst.size(), 0, 0, cv::INTER_LINEAR);
        });
      } else {
        warp_tile(tiles[i]->image, t, d, out, placed);
      }
      for (std::size_t k = 0; k < placed.boxes.size(); ++k) append_instance(moved, placed, k);
    }
    warp_geometry(geometry, d);
    sample.image = out;
    sample.pixel_plan = std::move(plan);
    sample.boxes = std::move(moved.boxes);
    sample.polygons = std::move(moved.polygons);
    sample.keypoints = std::move(moved.keypoints);
    sample.masks.clear();
    sample.image_class = -1;
    sample.geometry = geometry;
  }

 private:
  // Scale + translation: resize the visible part into the output pixels it covers (`resize`
  // does it, or plans it, from the source rectangle to the output rectangle).
  template <class Resize>
  static void resize_tile(const TilePlacement& t, const PerspectiveDraw& d, cv::Size out,
                          Sample& placed, Resize&& resize) {
    Span x, y;
    if (!visible_span(d.M(0, 0), d.M(0, 2), t.canvas.x, t.canvas.x + t.canvas.width, out.width, x) ||
        !visible_span(d.M(1, 1), d.M(1, 2), t.canvas.y, t.canvas.y + t.canvas.height, out.height, y)) {
      placed = Sample();  // nothing of this tile shows
      return;
    }
    const cv::Rect src(x.src0 - t.shift.x, y.src0 - t.shift.y, x.src1 - x.src0, y.src1 - y.src0);
    const cv::Rect dst(x.dst0, y.dst0, x.dst1 - x.dst0, y.dst1 - y.dst0);
    resize(src, dst);
    // The map these pixels took, canvas edge coordinates -> output edge coordinates.
    const double kx = static_cast<double>(dst.width) / src.width, ky = static_cast<double>(dst.height) / src.height;
    PixelMap map;
    map.M = cv::Matx33d(kx, 0, x.dst0 - kx * x.src0, 0, ky, y.dst0 - ky * y.src0, 0, 0, 1);
    map.size = out;
    map.scale = d.s;
    map.clip = cv::Rect2d(dst);
    const InstanceFilter filter;
    move_instances(placed, map, &filter);
  }

  // Rotation, shear or perspective: warp the visible part (grown by one replicated pixel)
  // into the bounding rectangle of where it lands; pixels outside the part stay as they are.
  static void warp_tile(const cv::Mat& image, const TilePlacement& t, const PerspectiveDraw& d, cv::Mat& out,
                        Sample& placed) {
    const cv::Rect whole(0, 0, out.cols, out.rows);
    cv::Rect roi = whole;
    bool finite = true;
    double x1 = INFINITY, y1 = INFINITY, x2 = -INFINITY, y2 = -INFINITY;
    const double cx[2] = {t.canvas.x - 1.0, t.canvas.x + t.canvas.width + 0.0};
    const double cy[2] = {t.canvas.y - 1.0, t.canvas.y + t.canvas.height + 0.0};
    for (double px : cx) {
      for (double py : cy) {
        const cv::Vec3d p = d.M * cv::Vec3d(px, py, 1.0);
        const double w = d.projective ? p[2] : 1.0;
        if (!(w > 1e-9)) finite = false;  // behind the projection: keep the whole output
        x1 = std::min(x1, p[0] / w), x2 = std::max(x2, p[0] / w);
        y1 = std::min(y1, p[1] / w), y2 = std::max(y2, p[1] / w);
      }
    }
    if (finite) {
      const double lim = 4.0 * std::max(out.cols, out.rows);  // keeps the int conversion in range
      roi = cv::Rect(cv::Point(static_cast<int>(std::floor(std::max(x1, -lim))) - 1,
                               static_cast<int>(std::floor(std::max(y1, -lim))) - 1),
                     cv::Point(static_cast<int>(std::ceil(std::min(x2, lim))) + 2,
                               static_cast<int>(std::ceil(std::min(y2, lim))) + 2)) &
            whole;
    }
    if (!roi.empty()) {
      cv::Mat part;
      cv::copyMakeBorder(image(t.tile), part, 1, 1, 1, 1, cv::BORDER_REPLICATE);
      // part pixel (u, v) is canvas pixel (u + canvas.x - 1, v + canvas.y - 1).
      cv::Matx33d from_part = cv::Matx33d::eye(), to_roi = cv::Matx33d::eye();
      from_part(0, 2) = t.canvas.x - 1.0;
      from_part(1, 2) = t.canvas.y - 1.0;
      to_roi(0, 2) = -roi.x;
      to_roi(1, 2) = -roi.y;
      const cv::Matx33d W = to_roi * d.M * from_part;
      cv::Mat dst = out(roi);
      if (d.projective) {
        cv::warpPerspective(part, dst, cv::Mat(W), roi.size(), cv::INTER_LINEAR, cv::BORDER_TRANSPARENT);
      } else {
        const cv::Matx23d A(W(0, 0), W(0, 1), W(0, 2), W(1, 0), W(1, 1), W(1, 2));
        cv::warpAffine(part, dst, cv::Mat(A), roi.size(), cv::INTER_LINEAR, cv::BORDER_TRANSPARENT);
      }
    }
    const InstanceFilter filter;
    move_instances(placed, pixel_map(d, out.cols, out.rows), &filter);
  }

  MosaicSettings settings_;
  PerspectiveRanges ranges_;
  int pad_value_ = 114;
  std::string where_;
};

void register_mosaic_perspective(Registrar& r) {
  r.add_augmentation<MosaicPerspective>(
      "mosaic_perspective", MosaicPerspective::schema(),
      "mosaic then random_perspective in one pass (same parameters, same random draws): each of "
      "the four images is warped straight into the imgsz x imgsz output, without the 2*imgsz canvas.",
      keeps(Field::Boxes | Field::Polygons | Field::Keypoints));
}

}  // namespace
}  // namespace yoloflow::plugins

YOLOFLOW_PLUGIN("mosaic_perspective", "1.0.0", yoloflow::plugins::register_mosaic_perspective)
