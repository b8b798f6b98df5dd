#pragma once
// Where a component the host made comes from: its kind and plugin name, the library that
// registered it, and the pipeline node or JSON path it was made for. Recorded when it is created
// (component_factory.h), so that whatever the host later calls on it, a failure names it.
#include <string>

#include "runtime/plugin/registry.h"

namespace yoloflow::core {

struct ComponentOrigin {
  Kind kind = Kind::Source;
  std::string plugin;  // its registered name
  std::string file;    // the plugin library, or "<built-in>"
  std::string path;    // "stages.train.params.scheduler", or a node's display name

  // "stages.train.params.scheduler (scheduler 'linear', /.../yoloflow_scheduler.so)"
  std::string text() const;
};

ComponentOrigin component_origin(const RegisteredComponent& rc, const std::string& path);

}  // namespace yoloflow::core
