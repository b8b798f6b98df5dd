#include "cli/resume_word.h"

#include "runtime/pipeline/word_values.h"
#include "yoloflow/error.h"

namespace yoloflow::cli {
namespace {

// true when `word` was resume= (taken into `resume_dir`).
bool take(const std::string& word, std::string& resume_dir, bool& taken) {
  if (word.rfind("resume=", 0) != 0) return false;
  const std::string value = word.substr(7);
  bool flag = false;
  if (core::parse_word_bool(value, flag)) {
    if (flag) {
      throw InvalidInput("resume=True: name the run to continue: resume=RUN_DIR/weights/last.pt or --resume RUN_DIR "
                         "(yoloflow does not guess the latest run)");
    }
    return true;
  }
  if (!resume_dir.empty() && !taken) {
    throw InvalidInput("resume=" + value + " and --resume " + resume_dir + " both name the run to continue; give one");
  }
  resume_dir = value;
  taken = true;
  return true;
}

}  // namespace

void take_resume_word(std::string& first, std::vector<std::string>& words, std::string& resume_dir) {
  bool taken = false;
  if (take(first, resume_dir, taken)) first.clear();
  for (auto it = words.begin(); it != words.end();) {
    if (take(*it, resume_dir, taken)) {
      it = words.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace yoloflow::cli
