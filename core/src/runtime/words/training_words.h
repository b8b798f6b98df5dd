#pragma once
// Ultralytics' training words that are no single parameter of a stage: optimizer=SGD names a
// component, cos_lr=True chooses the scheduler, mosaic= and close_mosaic= write the mosaic's
// schedule, mixup= adds the mixup stage where the pipeline has none, amp= picks the precision,
// val=, plots=, nbs=, conf= and iou= set the train sink's own names for them; and the values
// Ultralytics writes that mean something else here (cache=True, batch=-1, save_period=-1).
// Used by the shortcut words (shortcut_words.h) for pipelines that end in a training sink; each
// group of words is expanded in a file of its own (training_word_groups.h).
#include <string>
#include <vector>

#include "runtime/plugin/registry.h"
#include "yoloflow/params.h"

namespace yoloflow::core {

// The name of the sink stage when it trains (its component has an `optimizer` parameter);
// "" otherwise.
std::string training_sink(const json& document, const Registry& registry);

// `text` as yoloflow reads the value of the Ultralytics word `key`: cache=True -> "ram",
// cache=False -> "none", batch=-1 -> "auto", save_period=-1 -> 0; `text` itself otherwise.
std::string training_word_value(const std::string& key, const std::string& text);

// When `key` is one of the words above: true, with `expanded` holding the full-path overrides
// it stands for (possibly none, when the document was edited in place: a stage added or a
// callback removed) or a diagnostic appended to `out`. False for any other word. `words` are
// all the command's words (mosaic= and close_mosaic= write one schedule together).
bool expand_training_word(const std::string& key, const std::string& text, const std::vector<std::string>& words,
                          json& document, const Registry& registry, std::vector<std::string>& expanded,
                          Diagnostics& out);

// After the overrides are applied: Ultralytics' warning that optimizer=auto chooses its own lr0
// and momentum, when the words set either and the sink's optimizer is `auto`. Empty when none.
std::string optimizer_auto_warning(const json& document, const std::vector<std::string>& words,
                                   const Registry& registry);

}  // namespace yoloflow::core
