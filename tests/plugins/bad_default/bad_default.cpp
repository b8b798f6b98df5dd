// A plugin whose schema declares a default outside its own range (p = 1.5 in [0, 1]): every
// pipeline leaving `p` out would pass validation and then run with a value the schema refuses.
// The host must refuse the library at load, naming the plugin, component, parameter, default and
// range.
#include "yoloflow/augmentation.h"
#include "yoloflow/plugin.h"

namespace {
class Nop final : public yoloflow::Augmentation {
 public:
  void apply(yoloflow::Sample&, yoloflow::AugmentContext&) override {}
};

void register_it(yoloflow::Registrar& r) {
  yoloflow::Schema s;
  s.add_float("p", 1.5).range(0.0, 1.0).doc("Probability of doing nothing.");
  r.add_augmentation<Nop>("test_bad_default", std::move(s), "Declares a default outside its range (test plugin).");
}
}  // namespace

YOLOFLOW_PLUGIN("test_bad_default", "1.0.0", register_it)
