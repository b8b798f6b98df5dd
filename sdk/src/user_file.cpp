#include "yoloflow/user_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <new>

#include "file_kind.h"
#include "yoloflow/error.h"

namespace yoloflow {
namespace {

std::string errno_words(int err) {
  switch (err) {
    case ENOENT:
    case ENOTDIR: return "does not exist";
    case ELOOP: return "is a loop of symbolic links";
    case EACCES:
    case EPERM: return "cannot be read (permission denied)";
    case ENAMETOOLONG: return "cannot be read (its name is too long)";
    default: return std::string("cannot be read (") + std::strerror(err) + ")";
  }
}

std::string type_words(mode_t mode) {
  if (S_ISREG(mode)) return "";
  const std::string kind = detail::file_kind(mode);
  return kind == "not a regular file" ? "is not a regular file" : "is not a regular file (" + kind + ")";
}

std::uint64_t machine_memory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return ~std::uint64_t{0};
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size);
}

std::string size_words(std::uint64_t size, const FileBudget& budget) {
  if (size > budget.max_bytes) {
    return "holds " + std::to_string(size) + " bytes, more than the " + std::to_string(budget.max_bytes) + " bytes " +
           budget.kind + " may hold";
  }
  if (size > machine_memory()) return "holds " + std::to_string(size) + " bytes, more than this machine's memory";
  return "";
}

// A descriptor of a regular file, opened without following into a pipe's wait and closed on
// every way out. `why` is set when the path cannot be read as a file.
class OpenFile {
 public:
  OpenFile(const std::string& path, std::string& why) {
    struct stat st {};
    // Refused before opening: opening a named pipe for reading waits for a writer.
    if (::stat(path.c_str(), &st) != 0) {
      why = errno_words(errno);
      return;
    }
    if (why = type_words(st.st_mode); !why.empty()) return;
    // O_NONBLOCK: should the path have become a pipe since stat, open returns at once and the
    // check on the descriptor refuses it.
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd_ < 0) {
      why = errno_words(errno);
      return;
    }
    if (::fstat(fd_, &st) != 0) {
      why = errno_words(errno);
      return;
    }
    if (why = type_words(st.st_mode); !why.empty()) return;
    size_ = static_cast<std::uint64_t>(st.st_size);
  }
  ~OpenFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;

  int fd() const { return fd_; }
  std::uint64_t size() const { return size_; }

  // Reads up to `count` bytes at `offset` into `out`; the bytes read, or -1 with errno set.
  long long read_at(std::uint64_t offset, char* out, std::size_t count) const {
    std::size_t done = 0;
    while (done < count) {
      const ssize_t n = ::pread(fd_, out + done, count - done, static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        return -1;
      }
      if (n == 0) break;
      done += static_cast<std::size_t>(n);
    }
    return static_cast<long long>(done);
  }

 private:
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

}  // namespace

std::string unreachable_path(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return "";
  return errno_words(errno);
}

std::string file_refusal(const std::string& path, const FileBudget& budget) {
  std::string why;
  OpenFile f(path, why);
  if (!why.empty()) return why;
  return size_words(f.size(), budget);
}

bool try_read_user_file(const std::string& path, const FileBudget& budget, std::string& bytes, std::string& why) {
  why.clear();
  OpenFile f(path, why);
  if (!why.empty()) return false;
  if (why = size_words(f.size(), budget); !why.empty()) return false;
  try {
    bytes.assign(static_cast<std::size_t>(f.size()), '\0');
  } catch (const std::bad_alloc&) {
    why = "holds " + std::to_string(f.size()) + " bytes, more than can be read into memory";
    return false;
  }
  const long long n = f.read_at(0, bytes.data(), bytes.size());
  if (n < 0) {
    why = errno_words(errno);
    return false;
  }
  if (static_cast<std::uint64_t>(n) != bytes.size()) {
    why = "shrank while it was read (" + std::to_string(n) + " of " + std::to_string(bytes.size()) + " bytes)";
    return false;
  }
  return true;
}

std::string read_user_file(const std::string& path, const FileBudget& budget, const std::string& name) {
  std::string bytes, why;
  if (!try_read_user_file(path, budget, bytes, why)) throw InvalidInput(name + " " + why);
  return bytes;
}

bool read_user_file_part(const std::string& path, const FileBudget& budget, std::uint64_t offset, std::size_t count,
                         std::string& bytes, std::string& why) {
  why.clear();
  bytes.clear();
  OpenFile f(path, why);
  if (!why.empty()) return false;
  if (why = size_words(f.size(), budget); !why.empty()) return false;
  if (offset >= f.size()) return true;
  const std::uint64_t available = f.size() - offset;
  bytes.resize(static_cast<std::size_t>(std::min<std::uint64_t>(count, available)));
  const long long n = f.read_at(offset, bytes.data(), bytes.size());
  if (n < 0) {
    why = errno_words(errno);
    return false;
  }
  bytes.resize(static_cast<std::size_t>(n));
  return true;
}

void for_each_line(const std::string& path, const LineBudget& budget, const std::string& name,
                   const std::function<bool(const std::string& line, std::size_t number)>& line) {
  std::string why;
  OpenFile f(path, why);
  if (!why.empty()) throw InvalidInput(name + " " + why);
  constexpr std::size_t kBlock = 64 * 1024;
  std::string block(kBlock, '\0');
  std::string current;
  std::size_t number = 0;
  std::uint64_t offset = 0;
  auto finish = [&]() {
    ++number;
    if (number > budget.max_lines) {
      throw InvalidInput(name + " has more than " + std::to_string(budget.max_lines) + " lines, more than " +
                         budget.kind + " may have");
    }
    std::size_t end = current.size();
    while (end > 0 && std::isspace(static_cast<unsigned char>(current[end - 1]))) --end;
    std::size_t start = 0;
    while (start < end && std::isspace(static_cast<unsigned char>(current[start]))) ++start;
    const bool more = line(current.substr(start, end - start), number);
    current.clear();
    return more;
  };
  for (;;) {
    const long long n = f.read_at(offset, block.data(), block.size());
    if (n < 0) throw InvalidInput(name + " " + errno_words(errno));
    if (n == 0) break;
    offset += static_cast<std::uint64_t>(n);
    const char* p = block.data();
    const char* end = p + n;
    while (p < end) {
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
      const char* stop = nl ? nl : end;
      if (current.size() + static_cast<std::size_t>(stop - p) > budget.max_line_bytes) {
        throw InvalidInput(name + " has a line " + std::to_string(number + 1) + " longer than " +
                           std::to_string(budget.max_line_bytes) + " bytes: it is not " + budget.kind);
      }
      current.append(p, stop);
      p = stop;
      if (nl) {
        ++p;
        if (!finish()) return;
      }
    }
  }
  if (!current.empty()) finish();
}

}  // namespace yoloflow
