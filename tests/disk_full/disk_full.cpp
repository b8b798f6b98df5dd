// A full disk for one kind of file, preloaded (LD_PRELOAD) into a process under test: opening
// a file for writing whose path contains $YOLOFLOW_DISK_FULL_MATCH fails with ENOSPC once
// $YOLOFLOW_DISK_FULL_AFTER such opens have succeeded (default 0), the way a disk that fills
// up during a run fails the next checkpoint. Other files, and every read, are untouched.
//
// With $YOLOFLOW_DISK_FULL_BYTES=N instead, such files open, and the disk fills up while they
// are written: write(2) to them takes N bytes in all, then fails with ENOSPC (the way a
// weights file meets a full disk halfway through). With $YOLOFLOW_DISK_FULL_STALL=1 as well, the
// write that reaches the budget hangs instead of failing: a test kills the process there, in
// the middle of writing the file.
#include <dlfcn.h>
#include <fcntl.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdlib>
#include <cstring>

#include <sys/types.h>
#include <unistd.h>

namespace {

const char* budget_text() {
  static const char* v = std::getenv("YOLOFLOW_DISK_FULL_BYTES");
  return v;
}

// The bytes the disk still takes, and which descriptors are files of the matching kind.
std::atomic<long> g_bytes_left{-1};
constexpr int kMaxFd = 4096;
std::atomic<bool> g_tracked[kMaxFd];

bool matches(const char* path, int flags) {
  static const char* match = std::getenv("YOLOFLOW_DISK_FULL_MATCH");
  return match != nullptr && path != nullptr && (flags & (O_WRONLY | O_RDWR)) != 0 && std::strstr(path, match) != nullptr;
}

// A file of the matching kind was opened as `fd`: its writes count against the budget.
int track(const char* path, int flags, int fd) {
  if (fd >= 0 && fd < kMaxFd && budget_text() != nullptr && matches(path, flags)) {
    long expected = -1;
    g_bytes_left.compare_exchange_strong(expected, std::strtol(budget_text(), nullptr, 10));
    g_tracked[fd].store(true);
  }
  return fd;
}

bool refuse(const char* path, int flags) {
  if (budget_text() != nullptr) return false;  // the disk fills up while writing instead
  static const char* match = std::getenv("YOLOFLOW_DISK_FULL_MATCH");
  static const long after = [] {
    const char* v = std::getenv("YOLOFLOW_DISK_FULL_AFTER");
    return v ? std::strtol(v, nullptr, 10) : 0L;
  }();
  static std::atomic<long> opened{0};
  if (match == nullptr || path == nullptr || (flags & (O_WRONLY | O_RDWR)) == 0) return false;
  if (std::strstr(path, match) == nullptr) return false;
  return opened.fetch_add(1) >= after;
}

template <class Fn>
Fn next(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

}  // namespace

#define YF_MODE(flags)                  \
  mode_t mode = 0;                      \
  if ((flags) & (O_CREAT | O_TMPFILE)) { \
    va_list ap;                         \
    va_start(ap, flags);                \
    mode = va_arg(ap, mode_t);          \
    va_end(ap);                         \
  }

extern "C" __attribute__((visibility("default"))) int open(const char* path, int flags, ...) {
  YF_MODE(flags)
  if (refuse(path, flags)) {
    errno = ENOSPC;
    return -1;
  }
  static const auto real = next<int (*)(const char*, int, ...)>("open");
  return track(path, flags, real(path, flags, mode));
}

extern "C" __attribute__((visibility("default"))) int open64(const char* path, int flags, ...) {
  YF_MODE(flags)
  if (refuse(path, flags)) {
    errno = ENOSPC;
    return -1;
  }
  static const auto real = next<int (*)(const char*, int, ...)>("open64");
  return track(path, flags, real(path, flags, mode));
}

extern "C" __attribute__((visibility("default"))) int openat(int dir, const char* path, int flags, ...) {
  YF_MODE(flags)
  if (refuse(path, flags)) {
    errno = ENOSPC;
    return -1;
  }
  static const auto real = next<int (*)(int, const char*, int, ...)>("openat");
  return track(path, flags, real(dir, path, flags, mode));
}

extern "C" __attribute__((visibility("default"))) int openat64(int dir, const char* path, int flags, ...) {
  YF_MODE(flags)
  if (refuse(path, flags)) {
    errno = ENOSPC;
    return -1;
  }
  static const auto real = next<int (*)(int, const char*, int, ...)>("openat64");
  return track(path, flags, real(dir, path, flags, mode));
}

extern "C" __attribute__((visibility("default"))) ssize_t write(int fd, const void* buf, size_t n) {
  static const auto real = next<ssize_t (*)(int, const void*, size_t)>("write");
  if (fd >= 0 && fd < kMaxFd && g_tracked[fd].load()) {
    long left = g_bytes_left.load();
    long take = 0;
    do {
      take = left < static_cast<long>(n) ? left : static_cast<long>(n);
      if (take <= 0) {
        static const bool stall = std::getenv("YOLOFLOW_DISK_FULL_STALL") != nullptr;
        while (stall) ::sleep(1);
        errno = ENOSPC;
        return -1;
      }
    } while (!g_bytes_left.compare_exchange_weak(left, left - take));
    return real(fd, buf, static_cast<size_t>(take));
  }
  return real(fd, buf, n);
}

extern "C" __attribute__((visibility("default"))) int close(int fd) {
  static const auto real = next<int (*)(int)>("close");
  if (fd >= 0 && fd < kMaxFd) g_tracked[fd].store(false);
  return real(fd);
}
