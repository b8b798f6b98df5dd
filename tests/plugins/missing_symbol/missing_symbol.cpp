// A plugin that needs a function no loaded library defines (as when built against another
// version of a dependency): loading must fail with the symbol's name.
#include "yoloflow/augmentation.h"
#include "yoloflow/plugin.h"

extern "C" int yoloflow_test_function_nobody_defines(int);

namespace {
class Nop final : public yoloflow::Augmentation {
 public:
  void apply(yoloflow::Sample& s, yoloflow::AugmentContext&) override {
    s.index = static_cast<std::size_t>(yoloflow_test_function_nobody_defines(1));
  }
};
void register_it(yoloflow::Registrar& r) { r.add_augmentation<Nop>("test_missing", {}, "Unloadable."); }
}  // namespace

YOLOFLOW_PLUGIN("test_missing_symbol", "1.0.0", register_it)
