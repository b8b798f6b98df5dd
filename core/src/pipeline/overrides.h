#pragma once
// Command-line overrides of a pipeline: `stages.letterbox.params.auto=true epochs=3`.
#include <string>
#include <vector>

#include "plugin/registry.h"
#include "yoloflow/params.h"

namespace yoloflow::core {

// "stages.a.params.b" -> {"stages", "a", "params", "b"} (empty parts kept, for the caller to refuse).
std::vector<std::string> split_path(const std::string& dotted);

// Applies each "dotted.path=value" to `document` before validation. The value is parsed as
// JSON, else taken as a string. The path must exist in the document or name a setting,
// stage key or parameter the schema at that place knows; otherwise a diagnostic (with the
// closest name) is appended and the document is left unchanged for that override.
void apply_overrides(json& document, const std::vector<std::string>& overrides,
                     const Registry& registry, Diagnostics& out);

}  // namespace yoloflow::core
