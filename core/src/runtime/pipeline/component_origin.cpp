#include "runtime/pipeline/component_origin.h"

#include "runtime/pipeline/component_spec.h"

namespace yoloflow::core {

std::string ComponentOrigin::text() const { return path + " (" + component_label(kind, plugin) + ", " + file + ")"; }

ComponentOrigin component_origin(const RegisteredComponent& rc, const std::string& path) {
  return ComponentOrigin{rc.info.kind, rc.info.name, rc.file, path};
}

}  // namespace yoloflow::core
