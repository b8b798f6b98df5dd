#pragma once
// An exclusive advisory lock (flock) on a folder, held while the object lives: processes that
// fetch or unpack into the same folder at once (the ranks of a distributed run) take turns,
// and the later ones find the first one's result. The folder itself is locked, so no lock
// file is left behind.
#include <string>

namespace yoloflow::core {

class FolderLock {
 public:
  // Waits for the lock on `folder` (which must exist). Throws InvalidInput when it cannot open it.
  explicit FolderLock(const std::string& folder);
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace yoloflow::core
