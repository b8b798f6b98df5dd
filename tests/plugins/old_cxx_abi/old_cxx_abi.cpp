// A plugin compiled with the old libstdc++ string ABI (_GLIBCXX_USE_CXX11_ABI=0), as a
// toolchain with that default builds it: its calls into the host name std::string functions
// the host does not have, so binding every symbol at load fails. The loader must still read
// its descriptor and refuse it with the C++ ABI message.
// Set here, before any library header, because the build's flags set the new ABI for every target.
#undef _GLIBCXX_USE_CXX11_ABI
#define _GLIBCXX_USE_CXX11_ABI 0

#include "yoloflow/augmentation.h"
#include "yoloflow/plugin.h"

namespace {
class OldAbiInvert final : public yoloflow::Augmentation {
 public:
  void configure(const yoloflow::Params& p, const yoloflow::StageContext&) override { p_ = p.get_float("p"); }
  void apply(yoloflow::Sample& s, yoloflow::AugmentContext& ctx) override {
    if (ctx.rng.chance(p_)) s.image = cv::Scalar(255, 255, 255) - s.image;
  }

 private:
  double p_ = 1.0;
};

void register_old_abi(yoloflow::Registrar& r) {
  yoloflow::Schema s;
  s.add_float("p", 1.0).range(0.0, 1.0).doc("Probability of inverting.");
  r.add_augmentation<OldAbiInvert>("test_old_abi_invert", std::move(s), "Inverts pixel values (test plugin).");
}
}  // namespace

YOLOFLOW_PLUGIN("test_old_cxx_abi", "1.0.0", register_old_abi)
