#include "yoloflow/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "file_kind.h"
#include "yoloflow/error.h"

namespace yoloflow {
namespace {

namespace fs = std::filesystem;

// The system's own words ("No space left on device", "Input/output error"): what a user
// searches for.
std::string reason(int e) { return std::strerror(e); }

// ".NAME.tmp.PID.N.EXT" beside the target: hidden, unique per process and writer, and ending
// in the target's extension, so a writer that picks its format by the name (a video encoder)
// picks the target's. A killed writer's leftovers are recognisable by this shape.
std::string temp_name_for(const fs::path& target) {
  static std::atomic<unsigned> counter{0};
  const std::string name = target.filename().string();
  return (target.parent_path() / ("." + name + ".tmp." + std::to_string(::getpid()) + "." +
                                  std::to_string(counter++) + target.extension().string()))
      .string();
}

void fsync_folder(const fs::path& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);  // best effort: some file systems refuse fsync on folders
    ::close(fd);
  }
}

}  // namespace

void check_writable_target(const std::string& path) {
  if (path.empty()) throw InvalidInput("cannot write a file with an empty name");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    throw InvalidInput("cannot write '" + path + "': it is " + detail::file_kind(st.st_mode) +
                       ", not a regular file; give the path of a file to write");
  }
}

AtomicFileWriter::AtomicFileWriter(const std::string& path) : path_(path) {
  check_writable_target(path_);
  const fs::path target(path_);
  std::error_code ec;
  if (!target.parent_path().empty()) fs::create_directories(target.parent_path(), ec);
  temp_ = temp_name_for(target);
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("cannot write '" + path_ + "': " + reason(errno));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_.c_str());
}

void AtomicFileWriter::fail(const std::string& why) noexcept {
  if (failure_.empty()) failure_ = why;
}

bool AtomicFileWriter::write(const void* data, std::size_t n) noexcept {
  if (!failure_.empty() || fd_ < 0) return false;
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail(reason(errno));
      return false;
    }
    if (w == 0) {  // a device that takes nothing more: the same as a full one
      fail(reason(ENOSPC));
      return false;
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

void AtomicFileWriter::commit() {
  if (committed_) return;
  // fsync before rename: after a crash the new name must not point to blocks never written.
  if (failure_.empty() && fd_ >= 0 && ::fsync(fd_) != 0) fail(reason(errno));
  if (fd_ >= 0 && ::close(fd_) != 0) fail(reason(errno));
  fd_ = -1;
  if (failure_.empty()) {
    // The target may have become a folder or a device since the writer opened.
    struct stat st {};
    if (::stat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      ::unlink(temp_.c_str());
      check_writable_target(path_);
    }
    if (::rename(temp_.c_str(), path_.c_str()) != 0) fail(reason(errno));
  }
  if (!failure_.empty()) {
    ::unlink(temp_.c_str());
    throw Error("cannot write '" + path_ + "': " + failure_ + "; the file was left as it was");
  }
  committed_ = true;
  fsync_folder(fs::path(path_).parent_path());
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  AtomicFileWriter out(path);
  out.write(bytes.data(), bytes.size());
  out.commit();
}

}  // namespace yoloflow
