#pragma once
// What a path that is not a regular file is, in the words every refusal uses ("a folder",
// "a named pipe", ...): one table for the reader (user_file.cpp) and the writer (atomic_file.cpp).
#include <sys/stat.h>

namespace yoloflow::detail {

// "" for a regular file.
inline const char* file_kind(mode_t mode) {
  if (S_ISREG(mode)) return "";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a named pipe";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace yoloflow::detail
