#pragma once
// Ultralytics' `cfg=FILE.yaml`: a yaml of arguments (an Ultralytics run's args.yaml, or one of
// the user's) read as words, before the command line's own words, which win.
#include <cstddef>
#include <string>
#include <vector>

namespace yoloflow::core {

// The words of `path`: one `key=value` per top-level key (null as None, booleans as True and
// False, lists as [a, b]), in the file's order, leaving out "cfg" and every key in `given`
// (the command line's own). Throws InvalidInput in one line naming `word` when the file is
// missing, not YAML, not a mapping, or holds a value that is a mapping.
std::vector<std::string> cfg_file_words(const std::string& path, const std::string& word,
                                        const std::vector<std::string>& given);

// Every `cfg=FILE.yaml` among `args` from index `first` on replaced, in its place, by the file's
// words (cfg_file_words), leaving out the keys the command line's own key=value words give;
// cfg=None (a replayed args.yaml's) is taken out: no file.
void expand_cfg_words(std::vector<std::string>& args, std::size_t first);

}  // namespace yoloflow::core
