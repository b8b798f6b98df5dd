// Test plugin: `stretch`, an augmentation that resizes an image to exactly height x width,
// ignoring its aspect ratio (no padding). Not a letterbox: a validation that uses it shows
// that the host fits validation images with the transform a pipeline names, not its own.
#include <opencv2/imgproc.hpp>

#include "yoloflow/augmentation.h"
#include "yoloflow/error.h"
#include "yoloflow/plugin.h"

namespace {

using namespace yoloflow;

class Stretch final : public Augmentation {
 public:
  void configure(const Params& p, const StageContext& context) override {
    height_ = p.is_null("height") ? context.imgsz : static_cast<int>(p.get_int("height"));
    width_ = p.is_null("width") ? context.imgsz : static_cast<int>(p.get_int("width"));
  }

  void apply(Sample& sample, AugmentContext&) override {
    if (sample.image.empty()) throw Error("stretch: sample '" + sample.path + "' has no image");
    const double sx = static_cast<double>(width_) / sample.image.cols;
    const double sy = static_cast<double>(height_) / sample.image.rows;
    Geometry& g = sample.geometry;
    if (g.original_width == 0 || g.original_height == 0) {
      g.original_width = sample.image.cols;
      g.original_height = sample.image.rows;
    }
    cv::Mat out;
    cv::resize(sample.image, out, cv::Size(width_, height_), 0, 0, cv::INTER_LINEAR);
    for (auto& b : sample.boxes) {
      b.x1 = static_cast<float>(b.x1 * sx);
      b.x2 = static_cast<float>(b.x2 * sx);
      b.y1 = static_cast<float>(b.y1 * sy);
      b.y2 = static_cast<float>(b.y2 * sy);
    }
    g.ratio_x *= sx;
    g.ratio_y *= sy;
    g.pad_x *= sx;
    g.pad_y *= sy;
    sample.image = out;
  }

 private:
  int height_ = 640, width_ = 640;
};

void register_stretch(Registrar& r) {
  Schema s;
  s.add_int("height").min(1).doc("Output height; absent: imgsz.");
  s.add_int("width").min(1).doc("Output width; absent: imgsz.");
  r.add_augmentation<Stretch>("stretch", std::move(s), "Resizes to height x width, aspect ratio ignored (test plugin).");
}

}  // namespace

YOLOFLOW_PLUGIN("test_stretch", "1.0.0", register_stretch)
