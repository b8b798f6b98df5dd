// keep_freed_memory_mapped: after it, an image-sized buffer freed and allocated again costs
// no new page faults (with glibc's defaults each round faults in every page again).
#include <doctest/doctest.h>

#include <sys/resource.h>

#include <cstring>
#include <memory>

#include "util/malloc_tuning.h"

namespace {

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// Allocates, writes every byte of and frees `bytes`; returns the page faults that took.
long faults_of_one_buffer(std::size_t bytes) {
  const long before = minor_faults();
  {
    std::unique_ptr<unsigned char[]> p(new unsigned char[bytes]);
    std::memset(p.get(), 7, bytes);
    CHECK(p[bytes - 1] == 7);
  }
  return minor_faults() - before;
}

}  // namespace

TEST_CASE("after keep_freed_memory_mapped, a freed image buffer is reused without page faults") {
#if defined(__GLIBC__)
  if (!yoloflow::core::keep_freed_memory_mapped()) {
    MESSAGE("GLIBC_TUNABLES sets malloc options: the user's settings are kept, nothing to check");
    return;
  }
  CHECK(yoloflow::core::keep_freed_memory_mapped());  // again: still applied, no change
  const std::size_t bytes = 8u << 20;  // a 1280x1280x3 mosaic canvas is 4.9 MB
  const long pages = static_cast<long>(bytes / 4096);
  faults_of_one_buffer(bytes);  // the first time the heap grows: faults expected
  const long again = faults_of_one_buffer(bytes);
  CAPTURE(again);
  CHECK(again < pages / 10);
#else
  CHECK_FALSE(yoloflow::core::keep_freed_memory_mapped());
#endif
}
