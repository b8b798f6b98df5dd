// A plugin that records another LibTorch version than the host's (as if compiled against
// other LibTorch headers).
#include "yoloflow/augmentation.h"
#include "yoloflow/plugin.h"

namespace {
class Nop final : public yoloflow::Augmentation {
 public:
  void apply(yoloflow::Sample&, yoloflow::AugmentContext&) override {}
};
void register_it(yoloflow::Registrar& r) { r.add_augmentation<Nop>("test_nop", {}, "Does nothing."); }
}  // namespace

#undef YOLOFLOW_PLUGIN_TORCH_VERSION
#define YOLOFLOW_PLUGIN_TORCH_VERSION "0.4.1"
YOLOFLOW_PLUGIN("test_wrong_torch", "1.0.0", register_it)
