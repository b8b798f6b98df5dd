// A cap on the size of one aligned allocation, preloaded (LD_PRELOAD) into a process under
// test: posix_memalign refuses any block larger than $YOLOFLOW_ALLOC_CAP_BYTES with ENOMEM, the
// way a CUDA caching allocator refuses a block beyond its cap. LibTorch's CPU allocator takes
// every tensor's storage from posix_memalign, so a batch whose activations need a larger block
// fails inside LibTorch with its own out-of-memory error, at the same tensor every run; a
// `ulimit -v` cap fails wherever the address space happens to run out (a thread's stack, a
// malloc arena), which is not reproducible.
#include <dlfcn.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>

namespace {
using PosixMemalign = int (*)(void**, std::size_t, std::size_t);

std::size_t cap_bytes() {
  static const std::size_t cap = [] {
    const char* v = std::getenv("YOLOFLOW_ALLOC_CAP_BYTES");
    return v ? static_cast<std::size_t>(std::strtoull(v, nullptr, 10)) : std::size_t{0};
  }();
  return cap;
}
}  // namespace

extern "C" __attribute__((visibility("default"))) int posix_memalign(void** out, std::size_t alignment,
                                                                     std::size_t size) {
  static const auto next = reinterpret_cast<PosixMemalign>(dlsym(RTLD_NEXT, "posix_memalign"));
  if (cap_bytes() != 0 && size > cap_bytes()) return ENOMEM;
  if (!next) return ENOMEM;
  return next(out, alignment, size);
}
