#pragma once
// The plugin libraries in a plugin folder.
#include <string>
#include <vector>

namespace yoloflow::core {

// The regular files named *.so in `dir` (symbolic links followed), sorted so that the load order
// (hence which of two duplicates is refused) is stable. Never throws: a folder that does not
// exist or cannot be read, and an entry that cannot be examined (a symbolic link loop, a link
// to nothing, an entry the process may not look at), are skipped with a warning naming them.
std::vector<std::string> plugin_libraries_in(const std::string& dir);

}  // namespace yoloflow::core
