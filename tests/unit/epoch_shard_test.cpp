// Sharding an epoch's order between data-parallel ranks.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "runtime/graph/epoch_order.h"

using namespace yoloflow::core;

TEST_CASE("shard_order: ranks take every world-th position, equal counts, padded by wrapping") {
  const auto order = epoch_order(10, true, 7, 3);
  for (int world : {1, 2, 3, 4, 16}) {
    std::multiset<std::uint64_t> positions;
    std::set<std::size_t> indices;
    const std::size_t per_rank = shard_size(order.size(), world);
    CHECK(per_rank == (10 + world - 1) / world);
    for (int rank = 0; rank < world; ++rank) {
      const auto slots = shard_order(order, rank, world);
      REQUIRE(slots.size() == per_rank);
      for (std::size_t j = 0; j < slots.size(); ++j) {
        CHECK(slots[j].sequence == static_cast<std::uint64_t>(rank + j * world));
        CHECK(slots[j].index == order[slots[j].sequence % order.size()]);
        positions.insert(slots[j].sequence);
        indices.insert(slots[j].index);
      }
    }
    // Every position 0..per_rank*world-1 exactly once; every sample visited.
    CHECK(positions.size() == per_rank * world);
    for (std::uint64_t p = 0; p < per_rank * world; ++p) CHECK(positions.count(p) == 1);
    CHECK(indices.size() == 10);
  }
  // One process: the plain order.
  const auto one = shard_order(order, 0, 1);
  for (std::size_t i = 0; i < order.size(); ++i) CHECK(one[i].index == order[i]);
}

TEST_CASE("shard_order: from a resume position, with another world size") {
  const auto order = epoch_order(9, true, 1, 0);
  // 2 ranks stopped after 3 samples each: positions 0..5 are done, 6..8 are left.
  const auto a = shard_order(order, 0, 3, 6);
  const auto b = shard_order(order, 1, 3, 6);
  const auto c = shard_order(order, 2, 3, 6);
  REQUIRE(a.size() == 1);
  REQUIRE(b.size() == 1);
  REQUIRE(c.size() == 1);
  CHECK(a[0].sequence == 6);
  CHECK(b[0].sequence == 7);
  CHECK(c[0].sequence == 8);
  CHECK(c[0].index == order[8]);
  CHECK(shard_size(9, 2, 9) == 0);  // the epoch was finished
  CHECK(shard_order(order, 0, 2, 12).empty());
}
