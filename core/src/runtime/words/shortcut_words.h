#pragma once
// Ultralytics-style `key=value` words (data=, model=, batch=, device=, patience=, lr0= ...) as the
// pipeline overrides they stand for (docs/pipeline-format.md, "Shortcuts"): a word names what it
// means to an Ultralytics user, and this says where that is in the pipeline at hand.
#include <string>
#include <vector>

#include "runtime/plugin/registry.h"
#include "yoloflow/params.h"

namespace yoloflow::core {

// The full-path overrides the word `key=text` stands for; empty when `key` is none (a path, or a
// pipeline setting the word names itself); {""} when it is handled without one (the document
// edited in place) or refused with a diagnostic appended to `out`. `words` are all the
// command's words (some words read others: mosaic= and close_mosaic=, task= and model=). A
// pipeline that trains reads Ultralytics' training words first (training_words.h).
std::vector<std::string> expand_shortcut(const std::string& key, const std::string& text, json& document,
                                         const std::vector<std::string>& words, const Registry& registry,
                                         Diagnostics& out);

}  // namespace yoloflow::core
