#pragma once
// The command line's overrides of a pipeline: `stages.letterbox.params.auto=true epochs=3`, and
// Ultralytics' words among them, which stand for the paths they mean here (shortcut_words.h)
// before each is applied (runtime/pipeline/override_path.h).
#include <string>
#include <vector>

#include "runtime/plugin/registry.h"
#include "yoloflow/params.h"

namespace yoloflow::core {

// Applies each "dotted.path=value" to `document` before validation. The value is parsed as
// JSON, else taken as a string. Ultralytics-style words without a dot that are no pipeline
// setting stand for the paths they mean here: data= (the pipeline's `data` and every stage that
// names its own), model=yolo11s (the sink's model plugin and scale), device=0 (cuda:0), lr0=,
// momentum=, weight_decay= (the sink's optimizer), and any other parameter name that exactly
// one stage has (batch=16: the batcher's, patience=50: the train sink's). The path must exist in the document or name a setting,
// stage key or parameter the schema at that place knows; otherwise a diagnostic (with the
// closest name) is appended and the document is left unchanged for that override. A word whose
// path is given twice, or whose value holds a number no double holds (1e400), is refused the
// same way.
void apply_overrides(json& document, const std::vector<std::string>& overrides,
                     const Registry& registry, Diagnostics& out);

}  // namespace yoloflow::core
