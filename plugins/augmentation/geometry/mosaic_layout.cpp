#include "geometry/mosaic_layout.h"

#include <algorithm>
#include <string>

#include "yoloflow/annotations.h"
#include "yoloflow/error.h"

namespace yoloflow::plugins {

void add_mosaic_params(Schema& s) {
  s.add_float("p", 1.0).range(0.0, 1.0).doc(
      "Probability of a mosaic (schedule it to 0 for the last epochs: Ultralytics' close_mosaic).");
  s.add_enum("others", {"recent", "any"}, "recent").doc(
      "Where the other three images come from. 'recent': among the samples loaded just before "
      "this one (the last min(source size, 8 x batch, 1000), as Ultralytics' mosaic draws from its "
      "dataset buffer), whose decoded images the host still holds: no decode of their own, "
      "which without a RAM cache is most of the data path's time (yoloflow_bench_augment "
      "--recent-vs-any). 'any': uniformly among the whole source; each costs a load.");
}

MosaicSettings read_mosaic_params(const Params& params) {
  MosaicSettings m;
  m.p = params.get_float("p");
  m.from_recent = params.get_string("others") == "recent";
  return m;
}

MosaicDraw draw_mosaic(Rng& rng, const MosaicSettings& settings, int imgsz, const AugmentContext& context,
                       const std::string& where) {
  MosaicDraw d;
  if (!(rng.uniform() < settings.p)) return d;
  const std::size_t source_size = context.loader.size();
  if (source_size == 0) throw Error(where + ": the source has no samples to combine");
  d.apply = true;
  // Centre first (y then x, as Ultralytics), then the three other images.
  d.yc = static_cast<int>(rng.uniform(imgsz / 2, 2 * imgsz - imgsz / 2));
  d.xc = static_cast<int>(rng.uniform(imgsz / 2, 2 * imgsz - imgsz / 2));
  const RecentSamples& recent = context.recent;
  const bool from_recent = settings.from_recent && recent.count > 0;
  const std::size_t pool = from_recent ? recent.count : source_size;
  for (auto& o : d.others) {
    const auto pick = static_cast<std::size_t>(rng.integer(0, static_cast<std::int64_t>(pool) - 1));
    o = from_recent ? recent.indexes[pick] : pick;
  }
  return d;
}

TilePlacement place_tile(int i, int xc, int yc, int w, int h, int imgsz) {
  const int c = 2 * imgsz;
  int x1a, y1a, x2a, y2a, x1b, y1b, x2b, y2b;  // a: canvas, b: tile
  if (i == 0) {  // top left
    x1a = std::max(xc - w, 0), y1a = std::max(yc - h, 0), x2a = xc, y2a = yc;
    x1b = w - (x2a - x1a), y1b = h - (y2a - y1a), x2b = w, y2b = h;
  } else if (i == 1) {  // top right
    x1a = xc, y1a = std::max(yc - h, 0), x2a = std::min(xc + w, c), y2a = yc;
    x1b = 0, y1b = h - (y2a - y1a), x2b = std::min(w, x2a - x1a), y2b = h;
  } else if (i == 2) {  // bottom left
    x1a = std::max(xc - w, 0), y1a = yc, x2a = xc, y2a = std::min(c, yc + h);
    x1b = w - (x2a - x1a), y1b = 0, x2b = w, y2b = std::min(y2a - y1a, h);
  } else {  // bottom right
    x1a = xc, y1a = yc, x2a = std::min(xc + w, c), y2a = std::min(c, yc + h);
    x1b = 0, y1b = 0, x2b = std::min(w, x2a - x1a), y2b = std::min(y2a - y1a, h);
  }
  TilePlacement t;
  t.shift = cv::Point(x1a - x1b, y1a - y1b);
  if (x2a > x1a && y2a > y1a) {
    t.canvas = cv::Rect(x1a, y1a, x2a - x1a, y2a - y1a);
    t.tile = cv::Rect(x1b, y1b, x2b - x1b, y2b - y1b);
  }
  return t;
}

void place_instances(const Sample& tile, const TilePlacement& t, Sample& out) {
  if (t.canvas.empty()) return;
  const float x0 = static_cast<float>(t.canvas.x), x1 = static_cast<float>(t.canvas.x + t.canvas.width);
  const float y0 = static_cast<float>(t.canvas.y), y1 = static_cast<float>(t.canvas.y + t.canvas.height);
  const float dx = static_cast<float>(t.shift.x), dy = static_cast<float>(t.shift.y);
  for (std::size_t i = 0; i < tile.boxes.size(); ++i) {
    Box b = tile.boxes[i];
    b.x1 = std::clamp(b.x1 + dx, x0, x1);
    b.x2 = std::clamp(b.x2 + dx, x0, x1);
    b.y1 = std::clamp(b.y1 + dy, y0, y1);
    b.y2 = std::clamp(b.y2 + dy, y0, y1);
    if (!(b.x2 > b.x1 && b.y2 > b.y1)) continue;
    const std::size_t k = out.boxes.size();
    append_instance(out, tile, i);
    out.boxes[k] = b;
    if (!out.polygons.empty()) {
      for (auto& p : out.polygons[k]) {
        p.x = std::clamp(p.x + dx, x0, x1);
        p.y = std::clamp(p.y + dy, y0, y1);
      }
    }
    if (!out.keypoints.empty() && !tile.keypoints.empty()) {
      for (auto& p : out.keypoints[k]) {
        p.x += dx, p.y += dy;
        if (p.x < x0 || p.x > x1 || p.y < y0 || p.y > y1) p.visible = 0;
        p.x = std::clamp(p.x, x0, x1);
        p.y = std::clamp(p.y, y0, y1);
      }
    }
  }
  out.masks.clear();  // a mask is one image's: a mosaic does not keep masks
}

}  // namespace yoloflow::plugins
