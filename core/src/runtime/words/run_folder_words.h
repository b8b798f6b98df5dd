#pragma once
// Ultralytics' run folder words: project=, name= and exist_ok=, as Ultralytics 8.4 reads them.
// A run goes to project/name, a relative project under runs/detect (runs/detect/project/name;
// runs/detect alone when left out) and name the command's, train or val or predict, when left
// out; when that folder exists, to name-2, name-3, ... unless exist_ok=True, which writes into it.
#include <string>
#include <vector>

namespace yoloflow::core {

struct RunFolderWords {
  std::string project, name;
  bool exist_ok = false;
  bool exist_ok_given = false;
};

// Removes project=, name= and exist_ok= from `words` and returns them. Throws InvalidInput for
// an exist_ok value that is no bool, and for a project or name that is empty, holds a NUL or
// a control character, or leaves its folder through ".." (runtime/util/path_words.h).
RunFolderWords take_run_folder_words(std::vector<std::string>& words);

// The folder Ultralytics would write to: "" when neither project nor name is given (the
// command's own numbered folder then), else project/name or its first free name-2, name-3, ...
// (project/name itself with exist_ok).
std::string ultralytics_run_dir(const RunFolderWords& words, const std::string& default_name);

}  // namespace yoloflow::core
