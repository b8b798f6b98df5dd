// A plugin whose component constructor throws: the host must turn that into an error
// naming the plugin and the pipeline node, not crash.
#include <stdexcept>

#include "yoloflow/augmentation.h"
#include "yoloflow/plugin.h"

namespace {
class Throwing final : public yoloflow::Augmentation {
 public:
  Throwing() { throw std::runtime_error("constructor of test_throwing failed on purpose"); }
  void apply(yoloflow::Sample&, yoloflow::AugmentContext&) override {}
};
class ThrowingApply final : public yoloflow::Augmentation {
 public:
  void apply(yoloflow::Sample& s, yoloflow::AugmentContext&) override {
    if (s.index == 3) throw std::runtime_error("apply failed on purpose at sample 3");
  }
};
void register_it(yoloflow::Registrar& r) {
  r.add_augmentation<Throwing>("test_throwing", {}, "Throws in its constructor.");
  r.add_augmentation<ThrowingApply>("test_throwing_apply", {}, "Throws while augmenting sample 3.");
}
}  // namespace

YOLOFLOW_PLUGIN("test_throwing", "1.0.0", register_it)
