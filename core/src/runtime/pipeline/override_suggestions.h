#pragma once
// What an override whose path names nothing is told: the part that names nothing, what is named
// at that place, and the name most likely meant (the closest known one, or the path where a
// stage's or a parameter's name used on its own lives: `sink.delay_ms=3` is
// stages.sink.params.delay_ms). Kept apart from the walk (override_path.h), which only decides
// that a part names nothing.
#include <cstddef>
#include <string>
#include <vector>

#include "runtime/plugin/registry.h"
#include "yoloflow/params.h"

namespace yoloflow::core {

// The message for an override path `segs` whose part `i`, inside the object `here_object` at
// dotted `prefix`, is none of its keys nor of `known` (what may be named there, a `what`:
// "a pipeline setting", "a parameter of batcher 'x'"): "cannot override: 'PATH' is not WHAT",
// then the suggestion. At the top level the candidates are also every stage's parameter names
// and the shortcut words.
std::string unknown_part_message(const json& document, const Registry& registry, const std::vector<std::string>& segs,
                                 std::size_t i, const std::string& prefix, const json& here_object,
                                 const std::vector<std::string>& known, const std::string& what);

}  // namespace yoloflow::core
