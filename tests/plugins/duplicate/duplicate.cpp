// Registers a name that the "good" test plugin registers too.
#include "yoloflow/augmentation.h"
#include "yoloflow/plugin.h"

namespace {
class Nop final : public yoloflow::Augmentation {
 public:
  void apply(yoloflow::Sample&, yoloflow::AugmentContext&) override {}
};
void register_it(yoloflow::Registrar& r) {
  r.add_augmentation<Nop>("test_invert", {}, "Same name as the good plugin's.");
}
}  // namespace

YOLOFLOW_PLUGIN("test_duplicate", "1.0.0", register_it)
