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

// True for the keys whose default.yaml value is True or False: as Ultralytics reads them, such a
// key written alone (`yolo train ... cos_lr`) means KEY=True.
bool is_ultralytics_switch(const std::string& key);

}  // namespace yoloflow::core
