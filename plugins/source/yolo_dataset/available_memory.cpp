#include "available_memory.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

namespace yoloflow::plugins::yolo {
namespace {

// The first number of a one-line file ("max" and unreadable files: none).
std::optional<std::uint64_t> read_number(const char* path) {
  std::ifstream f(path);
  std::string word;
  if (!(f >> word) || word.empty() || word.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  try {
    return std::stoull(word);
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace

std::optional<std::uint64_t> available_memory_bytes() {
  std::optional<std::uint64_t> available;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream in(line.substr(13));
    std::uint64_t kib = 0;
    if (in >> kib) available = kib * 1024;
    break;
  }
  const auto limit = read_number("/sys/fs/cgroup/memory.max");
  const auto used = read_number("/sys/fs/cgroup/memory.current");
  if (limit && used) {
    const std::uint64_t left = *limit > *used ? *limit - *used : 0;
    available = available ? std::min(*available, left) : left;
  }
  return available;
}

}  // namespace yoloflow::plugins::yolo
