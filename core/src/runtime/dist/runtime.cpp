#include "runtime/dist/runtime.h"

namespace yoloflow::core::dist {
namespace {
DistEnv& slot() {
  static DistEnv env;
  return env;
}
}  // namespace

const DistEnv& current_env() { return slot(); }
void install_env(const DistEnv& env) { slot() = env; }

}  // namespace yoloflow::core::dist
