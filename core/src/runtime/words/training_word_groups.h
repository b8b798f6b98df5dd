#pragma once
// The groups of Ultralytics' training words that expand_training_word (training_words.h) hands
// a word to, one file each: what the run is and writes (run_words.cpp), the optimizer and its
// schedule (optimizer_words.cpp), what the dataset reader reads (dataset_words.cpp) and the
// image-mixing augmentations (augmentation_words.cpp); with the readers of a word's value and
// of the other words that they share. Internal to the words room.
#include <initializer_list>
#include <string>
#include <vector>

#include "runtime/plugin/registry.h"
#include "yoloflow/params.h"

namespace yoloflow::core {

// One training word being expanded, and where its result goes.
struct TrainingWord {
  const std::string& key;
  const std::string& text;                // its value, as training_word_value reads it
  const std::vector<std::string>& words;  // all the command's words
  json& document;                         // edited in place by the words that add or remove a part
  const Registry& registry;
  const std::string& sink;   // the training sink stage
  std::string at;            // "stages.<sink>.params.": where the sink's parameters are overridden
  std::vector<std::string>& expanded;
  Diagnostics& out;
};

// Each returns true when `w.key` is one of its group's words (expanded, edited in place, or
// refused with a diagnostic), false for any other word.
bool expand_run_word(const TrainingWord& w);
bool expand_optimizer_word(const TrainingWord& w);
bool expand_dataset_word(const TrainingWord& w);
bool expand_augmentation_word(const TrainingWord& w);

// The value of the last `key=` among `words`; empty when none names it.
std::string word_text(const std::vector<std::string>& words, const std::string& key);

// Whether one of `words` is `key=...`.
bool has_word(const std::vector<std::string>& words, const std::string& key);

// A stage whose component is the first of `plugins` that the pipeline has; "" when none is.
std::string stage_of(const json& document, const Registry& registry, std::initializer_list<const char*> plugins);

// `text` as a bool or a number into `value`; false, with a diagnostic naming `key`, when it is none.
bool bool_word(const std::string& key, const std::string& text, bool& value, Diagnostics& out);
bool number_word(const std::string& key, const std::string& text, double& value, Diagnostics& out);

// The most epochs a pipeline runs (its `epochs` setting's range): a count of epochs beyond it
// means nothing, and would not fit the int it is kept in.
constexpr double kMaxEpochs = 100000;

}  // namespace yoloflow::core
