#pragma once
// Ultralytics' `cfg=FILE.yaml`: a yaml of arguments (an Ultralytics run's args.yaml, or one of
// the user's) read as words, before the command line's own words, which win.
#include <string>
#include <vector>

namespace yoloflow::core {

// The words of `path`: one `key=value` per top-level key (null as None, booleans as True and
// False, lists as [a, b]), in the file's order, leaving out "cfg" and every key in `given`
// (the command line's own). Throws InvalidInput in one line naming `word` when the file is
// missing, not YAML, not a mapping, or holds a value that is a mapping.
std::vector<std::string> cfg_file_words(const std::string& path, const std::string& word,
                                        const std::vector<std::string>& given);

}  // namespace yoloflow::core
