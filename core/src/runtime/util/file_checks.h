#pragma once
// Reading a file a user names, bounded: only regular files (a named pipe would block forever,
// /dev/zero never ends, a folder is no file), and no more than a size the caller expects.
#include <cstdint>
#include <string>

namespace yoloflow::core {

// What `path` is when it is not a regular file: "a folder", "a named pipe", "a character
// device" ...; "no such file" when nothing is there; "" for a regular file (symbolic links
// followed).
std::string not_a_regular_file(const std::string& path);

// The whole file. Throws InvalidInput "<what> '<path>': <why>" when it is not a regular file,
// is larger than `max_bytes`, or cannot be read.
std::string read_regular_file(const std::string& path, std::uintmax_t max_bytes, const std::string& what);

}  // namespace yoloflow::core
