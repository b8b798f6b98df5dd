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

void mix_in(Sample& sample, Sample& other, bool paste, double ratio, const cv::Rect& rect) {
  PixelPlan& mine = plan_of(sample);
  PixelPlan& theirs = plan_of(other);
  if (theirs.width != mine.width || theirs.height != mine.height) {
    std::ostringstream s;
    s << "cannot mix a " << theirs.width << "x" << theirs.height << " image into a " << mine.width << "x"
      << mine.height << " one";
    throw Error(s.str());
  }
  if (mine.hsv || mine.flip_lr || mine.flip_ud || theirs.hsv || theirs.flip_lr || theirs.flip_ud) {
    throw Error("an image whose colours or flips are planned cannot be mixed (mixup and cutmix come before hsv and "
                "flip)");
  }
  if (paste && (rect.empty() || (rect & cv::Rect(0, 0, mine.width, mine.height)) != rect)) {
    std::ostringstream s;
    s << "a pasted rectangle " << rect << " is not inside the " << mine.width << "x" << mine.height << " image";
    throw Error(s.str());
  }
  MixedImage m;
  m.image = other.pixel_plan;
  m.paste = paste;
  m.ratio = ratio;
  m.rect = rect;
  mine.mixes.push_back(std::move(m));
}

namespace {

// Fills out.images[at] from `p` (its tiles, and the images mixed into it after the batch's own).
void gather_image(const PixelPlan& p, int at, int depth, const std::string& what, PlannedPixels& out,
                  std::map<DecodedImageKey, int>& source_of) {
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
                                   : cv::Rect(0, 0, p.width, p.height);
  for (const ResizedTile& t : p.tiles) {
    const cv::Rect source(0, 0, t.source.cols, t.source.rows);
    if (t.source.type() != CV_8UC3 || t.from.empty() || (t.from & source) != t.from || t.to.empty() ||
        (t.to & output) != t.to) {
      std::ostringstream s;
      s << what << " has a tile reading " << t.from << " of a " << t.source.cols << "x" << t.source.rows
        << " image into " << t.to << " of a " << output.width << "x" << output.height
        << (p.warped ? " canvas" : " output");
      throw Error(s.str());
    }
    const auto [where, added] = source_of.emplace(decoded_image_key(t.source), static_cast<int>(out.sources.size()));
    if (added) out.sources.push_back(t.source);
    out.tiles.push_back(PlannedPixels::Tile{where->second, t.from, t.to});
  }
  image.first_mix = static_cast<int>(out.mixes.size());
  image.mixes = static_cast<int>(p.mixes.size());
  if (!p.mixes.empty() && depth >= kMaxMixDepth) {
    throw Error(what + " mixes in images more than " + std::to_string(kMaxMixDepth) + " deep");
  }
  out.mixes.resize(out.mixes.size() + p.mixes.size());  // this image's, together
  for (std::size_t k = 0; k < p.mixes.size(); ++k) {
    const MixedImage& m = p.mixes[k];
    if (!m.image || m.image->width != p.width || m.image->height != p.height || m.image->hsv || m.image->flip_lr ||
        m.image->flip_ud) {
      throw Error(what + " mixes in an image of another size, or with colours or flips of its own");
    }
    const int other = static_cast<int>(out.images.size());
    out.images.emplace_back();
    PlannedPixels::Mix& mix = out.mixes[static_cast<std::size_t>(image.first_mix) + k];
    mix.image = other;
    mix.paste = m.paste;
    mix.ratio = m.ratio;
    mix.rect = m.rect;
    gather_image(*m.image, other, depth + 1, what + " (an image mixed in)", out, source_of);
  }
  out.images[static_cast<std::size_t>(at)] = image;
}

}  // namespace

PlannedPixels plan_batch(const std::vector<const PixelPlan*>& plans, int width, int height) {
  PlannedPixels out;
  out.images.resize(plans.size());  // the batch's own first; the images mixed in after them
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
    gather_image(p, static_cast<int>(k), 0, "image " + std::to_string(k) + " of the batch", out, source_of);
  }
  return out;
}

}  // namespace yoloflow
