#include "util/malloc_tuning.h"

#include <cstdlib>
#include <cstring>
#include <mutex>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace yoloflow::core {

bool keep_freed_memory_mapped() {
  static std::once_flag once;
  static bool applied = false;
  std::call_once(once, [] {
#if defined(__GLIBC__)
    const char* tunables = std::getenv("GLIBC_TUNABLES");
    if (tunables != nullptr && std::strstr(tunables, "glibc.malloc.") != nullptr) return;
    applied = mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1 && mallopt(M_TRIM_THRESHOLD, 1 << 30) == 1;
#endif
  });
  return applied;
}

}  // namespace yoloflow::core
