#pragma once
// A file read whole, but only when it is a regular file and only as many bytes as it holds:
// a named pipe would block forever, a character device such as /dev/zero never ends, and a
// folder cannot be read at all. Torch-free: it only handles bytes.
#include <string>

namespace yoloflow::core {

// `path`'s bytes. Throws InvalidInput in one line starting with `name` (what the file is to
// the user: "weights file 'x.pt'", "--weights x.pt"), e.g. "weights file 'x.pt' is not a
// regular file (a named pipe)", when it does not exist, is anything but a regular file
// (symbolic links are followed), cannot be opened, or shrinks while read.
std::string read_regular_file(const std::string& path, const std::string& name);

// What a path is when it is not a regular file, in words: "a named pipe", "a folder",
// "a character device"...; "" for a regular file or a path that does not exist.
std::string non_regular_kind(const std::string& path);

}  // namespace yoloflow::core
