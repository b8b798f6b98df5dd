#pragma once
// The order in which an epoch visits a source's samples.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace yoloflow::core {

// 0..size-1, shuffled (Fisher-Yates on a generator seeded from seed and epoch) when
// `shuffle`; the same arguments give the same order on every platform.
std::vector<std::size_t> epoch_order(std::size_t size, bool shuffle, std::uint64_t seed, int epoch);

// The seed of an epoch's sample generators, and the generator seed of the sample at `sequence`
// (its position in the epoch's order). The graph runner and AugmentedSamples (preview, auto
// batch) both draw from these, so a sample is augmented the same wherever it is made.
std::uint64_t epoch_seed(std::uint64_t seed, int epoch);
std::uint64_t sample_seed(std::uint64_t epoch_seed, std::uint64_t sequence);

// One sample of a data-parallel rank's share of an epoch.
struct ShardSlot {
  std::size_t index = 0;       // in the source
  std::uint64_t sequence = 0;  // position in the whole epoch order (what a checkpoint stores)
};

// The share of rank `rank` of `world` of an epoch's `order`, from position `start` on:
// positions start+rank, start+rank+world, ... Every rank gets the same count,
// shard_size(order.size(), world, start): positions past the end wrap around to the start of
// the order (as PyTorch's DistributedSampler pads), so the ranks run the same number of
// batches and their collectives pair up. world 1 is the plain order from `start`.
std::vector<ShardSlot> shard_order(const std::vector<std::size_t>& order, int rank, int world,
                                   std::uint64_t start = 0);
std::size_t shard_size(std::size_t size, int world, std::uint64_t start = 0);

}  // namespace yoloflow::core
