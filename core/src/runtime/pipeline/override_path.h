#pragma once
// One override `path=value` applied to a pipeline document before validation: the path is
// walked part by part, each part checked against what may be named at that place (a setting,
// a stage, a key of a stage, a parameter its component's schema knows), so that a misspelt path
// is refused with the closest name (override_suggestions.h) instead of adding a key nothing
// reads. The command line's words become such overrides in runtime/words/overrides.h.
#include <string>
#include <vector>

#include "runtime/plugin/registry.h"
#include "yoloflow/params.h"

namespace yoloflow::core {

// "stages.a.params.b" -> {"stages", "a", "params", "b"} (empty parts kept, for the caller to refuse).
std::vector<std::string> split_path(const std::string& dotted);

// Sets the value at dotted `path` in `document` to `value`. The path must exist in the document
// or name a setting, stage key or parameter the schema at that place knows; otherwise a
// diagnostic at `path` is appended and the document is left unchanged. A plugin replaced this
// way leaves behind the parameters the new plugin does not take.
void apply_override(json& document, const std::string& path, const json& value, const Registry& registry,
                    Diagnostics& out);

}  // namespace yoloflow::core
