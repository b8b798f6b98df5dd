#pragma once
// The order in which an epoch visits a source's samples.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace yoloflow::core {

// 0..size-1, shuffled (Fisher-Yates on a generator seeded from seed and epoch) when
// `shuffle`; the same arguments give the same order on every platform.
std::vector<std::size_t> epoch_order(std::size_t size, bool shuffle, std::uint64_t seed, int epoch);

}  // namespace yoloflow::core
