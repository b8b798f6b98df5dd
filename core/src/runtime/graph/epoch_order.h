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

// How many of the samples loaded last a mosaic draws its other images from (AugmentContext::
// recent): Ultralytics' dataset buffer, min(source size, 8 x batch, 1000). A batch below 1
// (not known) counts as the most, 1000.
std::size_t recent_window(std::size_t size, std::int64_t batch);

// The source indexes of the sample at `position` of epoch `order` and of the `window` - 1 that
// this process loaded before it, newest first: positions position, position - stride, ...
// (stride: the data-parallel world size, so a rank's own samples), continuing at the end of the
// previous epoch's order `previous` (empty: none) before position 0. A function of its
// arguments only, so a sample's mosaic draws the same images whichever thread makes it.
std::vector<std::size_t> recent_indexes(const std::vector<std::size_t>& order, const std::vector<std::size_t>& previous,
                                        std::uint64_t position, std::size_t window, int stride = 1);

}  // namespace yoloflow::core
