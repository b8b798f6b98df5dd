#pragma once
// Renders a component's schema as text (`describe`), JSON (`describe --json`) and
// Markdown (the generated reference docs): one source, three views.
#include <string>

#include "runtime/plugin/registry.h"

namespace yoloflow::core {

std::string describe_text(const RegisteredComponent& rc);
json describe_json(const RegisteredComponent& rc);
std::string describe_markdown(const RegisteredComponent& rc);

}  // namespace yoloflow::core
