#pragma once
// How much memory this process may still take, for sizing the RAM image cache as Ultralytics
// does (its check_cache_ram: the cache plus a 50% margin must fit in what is available).
#include <cstdint>
#include <optional>

namespace yoloflow::plugins::yolo {

// Bytes the kernel reports available (MemAvailable in /proc/meminfo), lowered to what the
// process's cgroup still allows (memory.max - memory.current, cgroup v2) when it is tighter,
// as in a container. Empty when neither can be read.
std::optional<std::uint64_t> available_memory_bytes();

}  // namespace yoloflow::plugins::yolo
