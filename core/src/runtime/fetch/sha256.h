#pragma once
// SHA-256 of a file, logged beside every file yoloflow fetches so that a user can compare it
// with the publisher's value. Written here rather than taken from a crypto library: it is the
// only digest the host needs, and libcurl's TLS backend is not a dependency the rest may rely on.
#include <cstddef>
#include <cstdint>
#include <string>

namespace yoloflow::core {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, std::size_t n);
  // The digest as 64 lowercase hex digits; the object is spent afterwards.
  std::string hex();

 private:
  void block(const unsigned char* p);
  std::uint32_t h_[8];
  unsigned char buf_[64];
  std::size_t used_ = 0;
  std::uint64_t total_ = 0;
};

// The SHA-256 of the whole file at `path`. Throws Error naming the path when it cannot be read.
std::string sha256_of_file(const std::string& path);

}  // namespace yoloflow::core
