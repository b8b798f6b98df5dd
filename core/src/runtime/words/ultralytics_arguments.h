#pragma once
// Ultralytics' arguments (every key of its cfg/default.yaml) and what each is in yoloflow: the
// verbs that take it as a word, and for the others why not. docs/ultralytics-arguments.md is the
// same list for users. A word that is one of these keys is never reported as an unknown setting.
#include <string>
#include <vector>

namespace yoloflow::core {

struct UltralyticsArgument {
  std::string key;
  // The yoloflow commands that take `key=value`: "train" (also validate, run and sweep, which
  // read the same pipeline words), "val", "predict", "export", "info".
  std::vector<std::string> verbs;
  // Why the other commands do not take it; shown after "Ultralytics' `key` ...".
  std::string reason;
};

// Every key of Ultralytics 8.4.56's default.yaml, in its order.
const std::vector<UltralyticsArgument>& ultralytics_arguments();

// The entry of `key`, or nullptr when Ultralytics has no argument of that name.
const UltralyticsArgument* find_ultralytics_argument(const std::string& key);

// "" when `verb` takes `key` (or `key` is no Ultralytics argument); else the one line that
// refuses it: "Ultralytics' `KEY` is not supported by `yoloflow VERB`: REASON".
std::string ultralytics_refusal(const std::string& key, const std::string& verb);

// Ultralytics 8.4.56's default of `key` as default.yaml writes it ("True", "0.0", "botsort.yaml";
// "" for none), or "" for a key it does not have.
std::string ultralytics_default(const std::string& key);

// Whether `key=value`, which `verb` does not take (ultralytics_refusal is not empty), asks for
// nothing, so that the arguments Ultralytics saved with a run (args.yaml, a checkpoint's
// train_args) replay: the value is Ultralytics' default or off (False, 0, None, empty); or the key
// is a setting of another command (a training setting on val, predict's on train), of another
// task (classification, pose, oriented boxes), or of output yoloflow sets otherwise (verbose),
// which Ultralytics itself ignores there. Words so taken are named in one note; the others are
// refused (they ask for behaviour yoloflow lacks: profile=True, half=True on val).
bool ultralytics_word_asks_nothing(const std::string& key, const std::string& value, const std::string& verb);

// The one note naming the words ultralytics_word_asks_nothing (or a None value) let `verb` take.
std::string ultralytics_ignored_note(const std::string& verb, const std::string& words);

// Whether `value` is Python's None as a saved run writes it (None, null): Ultralytics' "not set",
// which every command takes as the key's default.
bool is_ultralytics_none(const std::string& value);

// True for the keys whose default.yaml value is True or False: as Ultralytics reads them, such a
// key written alone (`yolo train ... cos_lr`) means KEY=True.
bool is_ultralytics_switch(const std::string& key);

}  // namespace yoloflow::core
