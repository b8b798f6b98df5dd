#pragma once
// A pipeline read as a command asks for it: the file or text, then the command line's words
// (`stages.letterbox.params.auto=true epochs=3`, Ultralytics' data= model= lr0= ...) applied as
// overrides, then validated and resolved (runtime/pipeline/pipeline_validation.h). It sits with
// the words because applying them is a step of reading: a word says where it goes only once
// the document it goes into has been read.
#include <string>
#include <vector>

#include "runtime/pipeline/pipeline.h"
#include "runtime/plugin/registry.h"

namespace yoloflow::core {

// Reads, overrides ("stages.letterbox.params.auto=true"), validates and resolves a
// pipeline file. Never throws for bad input: problems come back as diagnostics.
LoadedPipeline load_pipeline(const std::string& path, const std::vector<std::string>& overrides,
                             const Registry& registry);
// The same from text; relative paths are resolved against `base_dir`.
LoadedPipeline parse_pipeline(const std::string& text, const std::string& base_dir,
                              const std::vector<std::string>& overrides, const Registry& registry,
                              const std::string& file = "");

}  // namespace yoloflow::core
