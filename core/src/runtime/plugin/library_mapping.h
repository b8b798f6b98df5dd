#pragma once
// Where a loaded library lies in memory: its PT_LOAD segments as the dynamic loader mapped them
// (dl_iterate_phdr), with their permissions. The plugin loader checks every pointer a plugin's
// descriptor hands it against these before reading through it, so a descriptor pointing
// anywhere else (a small integer, the heap, the stack, past the library's end) is refused
// instead of crashing the host.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace yoloflow::core {

struct MappedSegment {
  std::uintptr_t begin = 0, end = 0;  // [begin, end)
  bool readable = false, executable = false;
};

class LibraryMapping {
 public:
  explicit LibraryMapping(std::vector<MappedSegment> segments) : segments_(std::move(segments)) {}

  // The segments of the library `handle` (from dlopen) names; nullopt when the dynamic loader
  // does not list it.
  static std::optional<LibraryMapping> of_loaded(void* handle);

  // [p, p + size) lies inside one readable segment.
  bool readable(const void* p, std::size_t size) const;
  // p lies inside an executable segment.
  bool executable(const void* p) const;
  // p is a string whose NUL terminator lies, with all of it, inside the readable segment p is in.
  bool terminated_string(const char* p) const;

  const std::vector<MappedSegment>& segments() const { return segments_; }

 private:
  const MappedSegment* readable_segment(std::uintptr_t address) const;
  std::vector<MappedSegment> segments_;
};

// "0x10", for a pointer in messages.
std::string pointer_text(const void* p);

}  // namespace yoloflow::core
