#pragma once
// Reading a file a user names: the SDK's one bounded reader (yoloflow/user_file.h: regular
// files only, checked on the descriptor read, never more than a budget), in the spellings the
// host's callers use.
#include <cstdint>
#include <string>

namespace yoloflow::core {

// Why `path` is no regular file: "does not exist", "is a loop of symbolic links", "is not a
// regular file (a named pipe)"...; "" for a regular file (symbolic links followed).
std::string not_a_regular_file(const std::string& path);

// The whole file. Throws InvalidInput "<what> '<path>' <why>" (what: "pipeline", "sweep file")
// when it is not a regular file, is larger than `max_bytes`, or cannot be read.
std::string read_regular_file(const std::string& path, std::uintmax_t max_bytes, const std::string& what);

// A weights file, read whole when the machine's memory holds it. Throws InvalidInput in one line
// starting with `name` (what the file is to the user: "weights file 'x.pt'", "--weights x.pt"),
// e.g. "weights file 'x.pt' is not a regular file (a named pipe)", "... does not exist".
std::string read_regular_file(const std::string& path, const std::string& name);

// What a path is when it is not a regular file, in words: "a named pipe", "a folder", "a
// character device"...; "" for a regular file or a path that does not exist.
std::string non_regular_kind(const std::string& path);

}  // namespace yoloflow::core
