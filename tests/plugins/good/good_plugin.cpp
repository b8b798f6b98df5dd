// A well-formed plugin: one augmentation that inverts the image, with a schema.
#include "yoloflow/augmentation.h"
#include "yoloflow/plugin.h"

namespace {
class TestInvert final : public yoloflow::Augmentation {
 public:
  void configure(const yoloflow::Params& p, const yoloflow::StageContext&) override {
    p_ = p.get_float("p");
  }
  void apply(yoloflow::Sample& s, yoloflow::AugmentContext& ctx) override {
    if (ctx.rng.chance(p_)) s.image = cv::Scalar(255, 255, 255) - s.image;
  }

 private:
  double p_ = 1.0;
};

void register_good(yoloflow::Registrar& r) {
  yoloflow::Schema s;
  s.add_float("p", 1.0).range(0.0, 1.0).doc("Probability of inverting.");
  r.add_augmentation<TestInvert>("test_invert", std::move(s), "Inverts pixel values (test plugin).");
}
}  // namespace

YOLOFLOW_PLUGIN("test_good", "1.0.0", register_good)
