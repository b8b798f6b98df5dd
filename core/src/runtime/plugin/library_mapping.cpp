#include "runtime/plugin/library_mapping.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <cstdio>
#include <cstring>

namespace yoloflow::core {
namespace {

struct Search {
  ElfW(Addr) base = 0;
  const char* name = nullptr;
  bool found = false;
  std::vector<MappedSegment> segments;
};

int collect_segments(dl_phdr_info* info, std::size_t, void* data) {
  auto& search = *static_cast<Search*>(data);
  if (info->dlpi_addr != search.base || info->dlpi_name == nullptr || std::strcmp(info->dlpi_name, search.name) != 0) {
    return 0;
  }
  search.found = true;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || ph.p_memsz == 0) continue;
    MappedSegment s;
    s.begin = static_cast<std::uintptr_t>(info->dlpi_addr + ph.p_vaddr);
    s.end = s.begin + static_cast<std::uintptr_t>(ph.p_memsz);
    s.readable = (ph.p_flags & PF_R) != 0;
    s.executable = (ph.p_flags & PF_X) != 0;
    search.segments.push_back(s);
  }
  return 1;  // stop
}

}  // namespace

std::optional<LibraryMapping> LibraryMapping::of_loaded(void* handle) {
  link_map* map = nullptr;
  if (handle == nullptr || ::dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_name == nullptr) {
    return std::nullopt;
  }
  Search search;
  search.base = map->l_addr;
  search.name = map->l_name;
  ::dl_iterate_phdr(&collect_segments, &search);
  if (!search.found || search.segments.empty()) return std::nullopt;
  return LibraryMapping(std::move(search.segments));
}

const MappedSegment* LibraryMapping::readable_segment(std::uintptr_t address) const {
  for (const auto& s : segments_) {
    if (s.readable && address >= s.begin && address < s.end) return &s;
  }
  return nullptr;
}

bool LibraryMapping::readable(const void* p, std::size_t size) const {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  const MappedSegment* s = readable_segment(address);
  return s != nullptr && size <= s->end - address;
}

bool LibraryMapping::executable(const void* p) const {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  for (const auto& s : segments_) {
    if (s.executable && address >= s.begin && address < s.end) return true;
  }
  return false;
}

bool LibraryMapping::terminated_string(const char* p) const {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  const MappedSegment* s = readable_segment(address);
  return s != nullptr && std::memchr(p, '\0', s->end - address) != nullptr;
}

std::string pointer_text(const void* p) {
  char text[2 + 2 * sizeof(void*) + 1];
  std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(p)));
  return text;
}

}  // namespace yoloflow::core
