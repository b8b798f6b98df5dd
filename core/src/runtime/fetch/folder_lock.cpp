#include "runtime/fetch/folder_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "yoloflow/error.h"

namespace yoloflow::core {

FolderLock::FolderLock(const std::string& folder) {
  fd_ = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) throw InvalidInput("cannot open " + folder + ": " + std::strerror(errno));
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR) break;  // a file system without locks: go on unlocked
  }
}

FolderLock::~FolderLock() { ::close(fd_); }

}  // namespace yoloflow::core
