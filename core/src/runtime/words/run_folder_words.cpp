#include "runtime/words/run_folder_words.h"

#include <filesystem>

#include "runtime/util/path_words.h"
#include "runtime/words/ultralytics_arguments.h"
#include "runtime/words/word_values.h"
#include "yoloflow/error.h"

namespace yoloflow::core {

RunFolderWords take_run_folder_words(std::vector<std::string>& words) {
  RunFolderWords r;
  for (auto it = words.begin(); it != words.end();) {
    const auto eq = it->find('=');
    const std::string key = eq == std::string::npos ? "" : it->substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : it->substr(eq + 1);
    if ((key == "project" || key == "name") && is_ultralytics_none(value)) {
      // project=None, name=None (a replayed args.yaml): not set, Ultralytics' default folder.
    } else if (key == "project") {
      // An absolute project is a folder of the user's; a relative one goes under runs/detect
      // and must stay there.
      check_path_word("project=", value);
      if (!std::filesystem::path(value).is_absolute()) check_name_word("project=", value);
      r.project = value;
    } else if (key == "name") {
      check_name_word("name=", value);
      r.name = value;
    } else if (key == "exist_ok") {
      if (!parse_word_bool(value, r.exist_ok)) {
        throw InvalidInput("exist_ok=" + value + ": expected True or False");
      }
      r.exist_ok_given = true;
    } else {
      ++it;
      continue;
    }
    it = words.erase(it);
  }
  return r;
}

std::string ultralytics_run_dir(const RunFolderWords& words, const std::string& default_name) {
  namespace fs = std::filesystem;
  if (words.project.empty() && words.name.empty()) return "";
  // Ultralytics 8.4 puts a relative project under its runs folder and the task (detect here):
  // project=P is runs/detect/P; an absolute one is taken as it is.
  const fs::path project(words.project);
  const fs::path base = (project.is_absolute() ? project : fs::path("runs/detect") / project) /
                        (words.name.empty() ? default_name : words.name);
  std::error_code ec;
  if (words.exist_ok || !fs::exists(base, ec)) return base.lexically_normal().string();
  // Its increment_path: NAME-2, NAME-3, ... the first that does not exist.
  for (int n = 2;; ++n) {
    const fs::path candidate = base.string() + "-" + std::to_string(n);
    if (!fs::exists(candidate, ec)) return candidate.lexically_normal().string();
  }
}

}  // namespace yoloflow::core
