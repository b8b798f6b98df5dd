// grayscale: an augmentation that turns a sample's image to grey with probability `p`,
// keeping three channels, so the rest of the pipeline is unchanged. Boxes are untouched.
//
// Example stage:
//   "gray": {"plugin": "grayscale", "input": "letterbox", "params": {"p": 0.1}}
#include <opencv2/imgproc.hpp>

#include "yoloflow/augmentation.h"
#include "yoloflow/plugin.h"

namespace {

class Grayscale final : public yoloflow::Augmentation {
 public:
  static yoloflow::Schema schema() {
    yoloflow::Schema s;
    s.add_float("p", 0.01).range(0.0, 1.0).doc("Probability that an image is turned grey.");
    return s;
  }
  void configure(const yoloflow::Params& params, const yoloflow::StageContext&) override {
    p_ = params.get_float("p");
  }
  void apply(yoloflow::Sample& sample, yoloflow::AugmentContext& context) override {
    if (!context.rng.chance(p_)) return;
    cv::Mat gray;
    cv::cvtColor(sample.image, gray, cv::COLOR_BGR2GRAY);
    cv::cvtColor(gray, sample.image, cv::COLOR_GRAY2BGR);
  }

 private:
  double p_ = 0.01;
};

void register_components(yoloflow::Registrar& registrar) {
  registrar.add_augmentation<Grayscale>("grayscale", Grayscale::schema(),
                                        "Turns images grey (3 channels kept) with probability p.",
                                        // Pixels only: every annotation field stays valid as it is.
                                        yoloflow::keeps(yoloflow::Fields::all()));
}

}  // namespace

YOLOFLOW_PLUGIN("example_grayscale", "1.0.0", register_components)
