#include "training/model/file_bytes.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "yoloflow/error.h"

namespace yoloflow::core {
namespace {

std::string kind_of(mode_t mode) {
  if (S_ISREG(mode)) return "";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a named pipe";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

// Closes the descriptor on every way out.
struct Descriptor {
  int fd = -1;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string non_regular_kind(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  return kind_of(st.st_mode);
}

std::string read_regular_file(const std::string& path, const std::string& name) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) throw InvalidInput(name + " does not exist");
    throw InvalidInput("cannot read " + name + ": " + std::strerror(err));
  }
  // Refused before opening: opening a named pipe for reading waits for a writer.
  if (const std::string kind = kind_of(st.st_mode); !kind.empty()) {
    throw InvalidInput(name + " is not a regular file (" + kind + ")");
  }
  Descriptor d;
  // O_NONBLOCK: should the path have become a pipe since stat, open returns at once and the
  // check on the descriptor below refuses it.
  d.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (d.fd < 0) throw InvalidInput("cannot open " + name + ": " + std::strerror(errno));
  if (::fstat(d.fd, &st) != 0) throw InvalidInput("cannot read " + name + ": " + std::strerror(errno));
  if (const std::string kind = kind_of(st.st_mode); !kind.empty()) {
    throw InvalidInput(name + " is not a regular file (" + kind + ")");
  }
  const auto size = static_cast<unsigned long long>(st.st_size);
  // A file larger than the machine's memory cannot be read whole; say so rather than run out.
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_size > 0 && size > static_cast<unsigned long long>(pages) * static_cast<unsigned long long>(page_size)) {
    throw InvalidInput(name + " holds " + std::to_string(size) + " bytes, more than this machine's memory");
  }
  std::string bytes;
  try {
    bytes.resize(static_cast<std::size_t>(size));
  } catch (const std::bad_alloc&) {
    throw InvalidInput(name + " holds " + std::to_string(size) + " bytes, more than can be read into memory");
  }
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(d.fd, &bytes[done], bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw InvalidInput("cannot read " + name + ": " + std::strerror(errno));
    }
    if (n == 0) {
      throw InvalidInput(name + " shrank while it was read (" + std::to_string(done) + " of " +
                         std::to_string(bytes.size()) + " bytes)");
    }
    done += static_cast<std::size_t>(n);
  }
  return bytes;
}

}  // namespace yoloflow::core
