#include "runtime/graph/epoch_order.h"

#include <algorithm>
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

std::size_t recent_window(std::size_t size, std::int64_t batch) {
  const std::size_t by_batch = batch >= 1 ? 8 * static_cast<std::size_t>(batch) : 1000;
  return std::min({size, by_batch, std::size_t{1000}});
}

std::vector<std::size_t> recent_indexes(const std::vector<std::size_t>& order, const std::vector<std::size_t>& previous,
                                        std::uint64_t position, std::size_t window, int stride) {
  std::vector<std::size_t> out;
  if (order.empty()) return out;
  out.reserve(window);
  const auto step = static_cast<std::int64_t>(std::max(1, stride));
  // Padding positions past the end (shard_order) stand for the start of the order again.
  for (auto p = static_cast<std::int64_t>(position % order.size()); out.size() < window; p -= step) {
    if (p >= 0) {
      out.push_back(order[static_cast<std::size_t>(p)]);
    } else {
      const std::int64_t q = static_cast<std::int64_t>(previous.size()) + p;
      if (q < 0) break;
      out.push_back(previous[static_cast<std::size_t>(q)]);
    }
  }
  return out;
}

}  // namespace yoloflow::core
