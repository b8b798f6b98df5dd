#pragma once
// A pipeline document checked before any component is constructed: its datasets made one
// (pipeline_datasets.h), then its top-level settings, plugins and their parameters (nested
// components too), monitors, edges and the annotation fields each stage needs
// (annotation_flow.h), every problem reported at once with its JSON path; and, when there is
// none, resolved (pipeline_resolution.h). Reading a pipeline with the command line's words
// applied first is runtime/words/pipeline_loading.h's, which calls these two in turn.
#include <string>

#include "runtime/pipeline/pipeline.h"

namespace yoloflow::core {

// `text` as a pipeline document: strict JSON (json_text.h) holding an object. False, with
// diagnostics appended, otherwise.
bool read_pipeline_document(const std::string& text, json& document, Diagnostics& out);

// Validates `document` (read, overrides applied) and resolves it into `result.pipeline` when
// neither this nor anything before it (`result.diagnostics` may already hold the overrides'
// problems) found a problem. What was adjusted (an imgsz rounded up to the stride) goes to
// `result.warnings`. Relative paths are resolved against `base_dir`; `file` is the pipeline
// file ("" when parsed from text).
void validate_pipeline(json& document, const std::string& base_dir, const Registry& registry, const std::string& file,
                       LoadedPipeline& result);

}  // namespace yoloflow::core
