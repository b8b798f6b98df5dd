#include "graph/epoch_order.h"

#include <numeric>
#include <random>
#include <utility>

#include "yoloflow/rng.h"

namespace yoloflow::core {

std::vector<std::size_t> epoch_order(std::size_t size, bool shuffle, std::uint64_t seed, int epoch) {
  std::vector<std::size_t> order(size);
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (!shuffle || size < 2) return order;
  // Not std::shuffle / uniform_int_distribution: their algorithms differ between standard
  // libraries, and a seed must mean the same order everywhere. The modulo bias of a 64-bit
  // draw over a dataset-sized range is negligible.
  std::mt19937_64 engine(Rng::mix(seed, static_cast<std::uint64_t>(epoch) + 0x5eedULL));
  for (std::size_t i = size - 1; i > 0; --i) {
    const std::size_t j = static_cast<std::size_t>(engine() % (i + 1));
    std::swap(order[i], order[j]);
  }
  return order;
}

std::uint64_t epoch_seed(std::uint64_t seed, int epoch) { return Rng::mix(seed, static_cast<std::uint64_t>(epoch)); }

std::uint64_t sample_seed(std::uint64_t epoch_seed, std::uint64_t sequence) { return Rng::mix(epoch_seed, sequence); }

std::size_t shard_size(std::size_t size, int world, std::uint64_t start) {
  if (start >= size || world < 1) return 0;
  const std::size_t left = size - static_cast<std::size_t>(start);
  return (left + static_cast<std::size_t>(world) - 1) / static_cast<std::size_t>(world);
}

std::vector<ShardSlot> shard_order(const std::vector<std::size_t>& order, int rank, int world, std::uint64_t start) {
  const std::size_t n = shard_size(order.size(), world, start);
  std::vector<ShardSlot> slots;
  slots.reserve(n);
  for (std::size_t j = 0; j < n; ++j) {
    const std::uint64_t position = start + static_cast<std::uint64_t>(rank) + j * static_cast<std::uint64_t>(world);
    slots.push_back({order[position % order.size()], position});
  }
  return slots;
}

}  // namespace yoloflow::core
