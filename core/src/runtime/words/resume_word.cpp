#include "runtime/words/resume_word.h"

#include <algorithm>

#include "runtime/words/word_values.h"
#include "yoloflow/error.h"

namespace yoloflow::core {
namespace {

enum class Resume { None, No, Yes, Path };

// What `word` says of resuming: nothing, resume=False, resume / resume=True (Ultralytics' bare
// word: the checkpoint is model=), or resume=PATH (into `path`).
Resume read(const std::string& word, std::string& path) {
  if (word == "resume") return Resume::Yes;
  if (word.rfind("resume=", 0) != 0) return Resume::None;
  const std::string value = word.substr(7);
  bool flag = false;
  if (parse_word_bool(value, flag)) return flag ? Resume::Yes : Resume::No;
  path = value;
  return Resume::Path;
}

}  // namespace

void take_resume_word(std::string& first, std::vector<std::string>& words, std::string& resume_dir) {
  const bool flag_given = !resume_dir.empty();
  std::string named;  // resume=PATH
  bool yes = false;
  auto take = [&](const std::string& word) {
    std::string path;
    const Resume r = read(word, path);
    if (r == Resume::None) return false;
    if (r == Resume::Yes) yes = true;
    if (r == Resume::Path) named = path;
    return true;
  };
  if (take(first)) first.clear();
  words.erase(std::remove_if(words.begin(), words.end(), take), words.end());
  if (yes && named.empty()) {
    // Ultralytics' `yolo train resume model=path/to/last.pt`: the checkpoint is model='s.
    // The command line's first word may be it (`train model=last.pt resume=True`): it arrives as
    // the pipeline argument.
    auto is_model = [](const std::string& w) { return w.rfind("model=", 0) == 0; };
    const auto model = std::find_if(words.begin(), words.end(), is_model);
    if (model != words.end()) {
      named = model->substr(6);
      words.erase(model);
    } else if (is_model(first)) {
      named = first.substr(6);
      first.clear();
    } else {
      throw InvalidInput("resume: name the run to continue: resume model=RUN_DIR/weights/last.pt, "
                         "resume=RUN_DIR/weights/last.pt or --resume RUN_DIR (yoloflow does not guess the latest run)");
    }
  }
  if (named.empty()) return;
  if (flag_given) {
    throw InvalidInput("resume=" + named + " and --resume " + resume_dir + " both name the run to continue; give one");
  }
  resume_dir = named;
}

}  // namespace yoloflow::core
