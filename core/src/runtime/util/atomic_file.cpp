#include "runtime/util/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "yoloflow/error.h"

namespace yoloflow::core {
namespace {

std::string errno_text() { return std::strerror(errno); }

void fsync_dir(const std::filesystem::path& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);  // best effort: some filesystems refuse fsync on folders
    ::close(fd);
  }
}

}  // namespace

void write_file_atomic(const std::string& path, std::string_view bytes) {
  namespace fs = std::filesystem;
  static std::atomic<unsigned> counter{0};
  const fs::path target(path);
  const fs::path dir = target.parent_path();
  std::error_code ec;
  if (!dir.empty()) fs::create_directories(dir, ec);
  const fs::path tmp = dir / ("." + target.filename().string() + ".tmp." +
                              std::to_string(::getpid()) + "." + std::to_string(counter++));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error("cannot write " + tmp.string() + ": " + errno_text());
  const char* p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string why = errno_text();
      ::close(fd);
      ::unlink(tmp.c_str());
      throw Error("cannot write " + path + ": " + why);
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const std::string why = errno_text();
    ::unlink(tmp.c_str());
    throw Error("cannot write " + path + ": " + why);
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    const std::string why = errno_text();
    ::unlink(tmp.c_str());
    throw Error("cannot replace " + path + ": " + why);
  }
  fsync_dir(dir);
}

}  // namespace yoloflow::core
