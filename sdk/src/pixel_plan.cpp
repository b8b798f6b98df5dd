#include "yoloflow/pixel_plan.h"

#include <map>
#include <sstream>
#include <tuple>

#include "yoloflow/error.h"
#include "yoloflow/sample.h"

namespace yoloflow {

PixelPlan& plan_of(Sample& sample) {
  if (!sample.pixel_plan) {
    if (sample.image.empty() || sample.image.type() != CV_8UC3) {
      throw Error("sample '" + sample.path + "' has no 8-bit BGR image to plan from");
    }
    auto plan = std::make_shared<PixelPlan>();
    plan->width = sample.image.cols;
    plan->height = sample.image.rows;
    const cv::Rect whole(0, 0, sample.image.cols, sample.image.rows);
    plan->tiles.push_back(ResizedTile{sample.image, whole, whole});
    sample.pixel_plan = std::move(plan);
    sample.image = cv::Mat();
  }
  return *sample.pixel_plan;
}

cv::Size image_size(const Sample& sample) {
  if (sample.pixel_plan) return {sample.pixel_plan->width, sample.pixel_plan->height};
  return sample.image.size();
}

PlannedPixels plan_batch(const std::vector<const PixelPlan*>& plans, int width, int height) {
  PlannedPixels out;
  out.images.reserve(plans.size());
  // A decoded image (its pixels, size and row step) -> its place in `sources`.
  std::map<DecodedImageKey, int> source_of;
  for (std::size_t k = 0; k < plans.size(); ++k) {
    const PixelPlan& p = *plans[k];
    if (p.width != width || p.height != height) {
      std::ostringstream s;
      s << "image " << k << " of the batch is planned " << p.width << "x" << p.height << " but the batch's images are "
        << width << "x" << height;
      throw Error(s.str());
    }
    PlannedPixels::Image image;
    image.first_tile = static_cast<int>(out.tiles.size());
    image.tiles = static_cast<int>(p.tiles.size());
    image.fill = p.fill;
    image.warped = p.warped;
    image.warp = p.warp;
    image.hsv = p.hsv;
    image.hsv_tables = p.hsv_tables;
    image.flip_lr = p.flip_lr;
    image.flip_ud = p.flip_ud;
    // The tiles land on the canvas of a warped plan, else on the output.
    const cv::Rect output = p.warped ? cv::Rect(0, 0, p.warp.canvas_width, p.warp.canvas_height)
                                     : cv::Rect(0, 0, width, height);
    for (const ResizedTile& t : p.tiles) {
      const cv::Rect source(0, 0, t.source.cols, t.source.rows);
      if (t.source.type() != CV_8UC3 || t.from.empty() || (t.from & source) != t.from || t.to.empty() ||
          (t.to & output) != t.to) {
        std::ostringstream s;
        s << "image " << k << " of the batch has a tile reading " << t.from << " of a " << t.source.cols << "x"
          << t.source.rows << " image into " << t.to << " of a " << output.width << "x" << output.height
          << (p.warped ? " canvas" : " output");
        throw Error(s.str());
      }
      const auto [at, added] = source_of.emplace(decoded_image_key(t.source),
                                                 static_cast<int>(out.sources.size()));
      if (added) out.sources.push_back(t.source);
      out.tiles.push_back(PlannedPixels::Tile{at->second, t.from, t.to});
    }
    out.images.push_back(image);
  }
  return out;
}

}  // namespace yoloflow
