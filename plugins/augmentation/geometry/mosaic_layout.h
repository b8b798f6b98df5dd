#pragma once
// Ultralytics' 2x2 mosaic layout, shared by the mosaic plugin (which builds the 2*imgsz
// canvas) and mosaic_perspective (which warps each tile's visible part straight into the
// output): the same parameters, the same random draws in the same order, the same placement.
#include <cstddef>
#include <vector>

#include <opencv2/core.hpp>

#include "yoloflow/augmentation.h"
#include "yoloflow/params.h"
#include "yoloflow/rng.h"
#include "yoloflow/sample.h"

namespace yoloflow::plugins {

// Adds "p", the mosaic's probability, and "others", where the other three images come from.
void add_mosaic_params(Schema& s);

struct MosaicSettings {
  double p = 1.0;
  bool from_recent = true;  // "others": "recent" (true) or "any"
};
MosaicSettings read_mosaic_params(const Params& params);

struct MosaicDraw {
  bool apply = false;        // false: no mosaic for this sample (nothing else was drawn)
  int xc = 0, yc = 0;        // centre on the 2*imgsz canvas
  std::size_t others[3] = {};  // source indices of tiles 1..3
};

// Draws whether to mosaic (probability p) and, if so, the centre (y then x, each in
// [imgsz/2, 3*imgsz/2)) and the three other samples: among the context's recent samples when
// `from_recent` and it has any, else among the whole source (the same draws either way, one
// integer per image). An empty source with a mosaic to make throws, naming `where`.
MosaicDraw draw_mosaic(Rng& rng, const MosaicSettings& settings, int imgsz, const AugmentContext& context,
                       const std::string& where);

// Where tile i (0 top left, 1 top right, 2 bottom left, 3 bottom right) of size w x h lands
// on the 2*imgsz canvas: `tile` (its pixels that stay) copies onto `canvas`; a tile pixel
// (x, y) is canvas pixel (x + shift.x, y + shift.y). Empty rects when nothing of it lands.
struct TilePlacement {
  cv::Rect canvas, tile;
  cv::Point shift;
};
TilePlacement place_tile(int i, int xc, int yc, int w, int h, int imgsz);

// Appends the tile's instances to `out`, moved onto the canvas and clipped to what of the tile
// stays there (tiles only lose what falls off the canvas), every field: boxes and polygon
// points clamped, keypoints outside made invisible and clamped (Ultralytics' clip of its
// mosaic); instances whose box has nothing left are dropped.
void place_instances(const Sample& tile, const TilePlacement& placement, Sample& out);

}  // namespace yoloflow::plugins
