// A full disk for one kind of file, preloaded (LD_PRELOAD) into a process under test: opening
// a file for writing whose path contains $YOLOFLOW_DISK_FULL_MATCH fails with ENOSPC once
// $YOLOFLOW_DISK_FULL_AFTER such opens have succeeded (default 0), the way a disk that fills
// up during a run fails the next checkpoint. Other files, and every read, are untouched.
#include <dlfcn.h>
#include <fcntl.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdlib>
#include <cstring>

namespace {

bool refuse(const char* path, int flags) {
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
  return real(path, flags, mode);
}

extern "C" __attribute__((visibility("default"))) int open64(const char* path, int flags, ...) {
  YF_MODE(flags)
  if (refuse(path, flags)) {
    errno = ENOSPC;
    return -1;
  }
  static const auto real = next<int (*)(const char*, int, ...)>("open64");
  return real(path, flags, mode);
}

extern "C" __attribute__((visibility("default"))) int openat(int dir, const char* path, int flags, ...) {
  YF_MODE(flags)
  if (refuse(path, flags)) {
    errno = ENOSPC;
    return -1;
  }
  static const auto real = next<int (*)(int, const char*, int, ...)>("openat");
  return real(dir, path, flags, mode);
}

extern "C" __attribute__((visibility("default"))) int openat64(int dir, const char* path, int flags, ...) {
  YF_MODE(flags)
  if (refuse(path, flags)) {
    errno = ENOSPC;
    return -1;
  }
  static const auto real = next<int (*)(int, const char*, int, ...)>("openat64");
  return real(dir, path, flags, mode);
}
