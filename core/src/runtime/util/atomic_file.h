#pragma once
// Files that are never seen half-written: a kill at any instant leaves either the old
// complete file or the new complete file (temp file in the same folder, flush, fsync,
// rename over the target, fsync the folder).
#include <string>
#include <string_view>

namespace yoloflow::core {

// Throws yoloflow::Error naming the path on any I/O failure; the target is untouched then.
void write_file_atomic(const std::string& path, std::string_view bytes);

}  // namespace yoloflow::core
