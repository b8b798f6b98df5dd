#include "yoloflow/pixel_plan.h"

#include <cstring>
#include <sstream>

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

PlannedPixels layout_plans(const std::vector<const PixelPlan*>& plans, int width, int height) {
  PlannedPixels out;
  out.images.reserve(plans.size());
  std::int64_t offset = 0;
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
    image.hsv = p.hsv;
    image.hsv_tables = p.hsv_tables;
    image.flip_lr = p.flip_lr;
    image.flip_ud = p.flip_ud;
    const cv::Rect output(0, 0, width, height);
    for (const ResizedTile& t : p.tiles) {
      const cv::Rect source(0, 0, t.source.cols, t.source.rows);
      if (t.source.type() != CV_8UC3 || t.from.empty() || (t.from & source) != t.from || t.to.empty() ||
          (t.to & output) != t.to) {
        std::ostringstream s;
        s << "image " << k << " of the batch has a tile reading " << t.from << " of a " << t.source.cols << "x"
          << t.source.rows << " image into " << t.to << " of a " << width << "x" << height << " output";
        throw Error(s.str());
      }
      PlannedPixels::Tile tile;
      tile.offset = offset;
      tile.from_width = t.from.width;
      tile.from_height = t.from.height;
      tile.to_x = t.to.x;
      tile.to_y = t.to.y;
      tile.to_width = t.to.width;
      tile.to_height = t.to.height;
      offset += static_cast<std::int64_t>(t.from.width) * t.from.height * 3;
      out.tiles.push_back(tile);
    }
    out.images.push_back(image);
  }
  out.size = static_cast<std::size_t>(offset);
  return out;
}

void copy_plan_bytes(const PixelPlan& plan, const PlannedPixels& planned, std::size_t k) {
  const PlannedPixels::Image& image = planned.images.at(k);
  for (int i = 0; i < image.tiles; ++i) {
    const ResizedTile& t = plan.tiles.at(static_cast<std::size_t>(i));
    const PlannedPixels::Tile& tile = planned.tiles.at(static_cast<std::size_t>(image.first_tile + i));
    std::uint8_t* dst = planned.bytes.get() + tile.offset;
    const std::size_t row = static_cast<std::size_t>(t.from.width) * 3;
    for (int y = 0; y < t.from.height; ++y, dst += row) {
      std::memcpy(dst, t.source.ptr<std::uint8_t>(t.from.y + y) + static_cast<std::size_t>(t.from.x) * 3, row);
    }
  }
}

}  // namespace yoloflow
