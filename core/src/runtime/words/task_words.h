#pragma once
// The words that say which model is trained and for which task: model=yolo11s (the sink's
// model plugin and scale), model=yolo11n-seg and task=segment (the task, with the task's loss,
// evaluator and mask targets: core/resources/task-components.json), and overlap_mask= and
// mask_ratio= (the mask targets' layout and size, on every batcher that makes them).
#include <string>
#include <vector>

#include "runtime/plugin/registry.h"
#include "yoloflow/params.h"

namespace yoloflow::core {

// When `key` is model, task, overlap_mask or mask_ratio: true, with `expanded` holding the
// overrides it stands for, or {""} after a diagnostic appended to `out`. False for any other
// word. `sink` is the pipeline's sink stage and `sink_rc` its component (null when it has none);
// `words` are all the command's words (task= checks the model word's task).
bool expand_model_word(const std::string& key, const std::string& text, const json& document, const std::string& sink,
                       const RegisteredComponent* sink_rc, const std::vector<std::string>& words,
                       const Registry& registry, std::vector<std::string>& expanded, Diagnostics& out);

}  // namespace yoloflow::core
