#pragma once
// The samples the source loaded last, kept decoded, so that a mosaic drawing its other images
// among them (AugmentContext::recent, Ultralytics' dataset buffer) copies pixels instead of
// decoding a file again: without a RAM cache, decoding the mosaic's three other images is most
// of the data path's time (yoloflow_bench_augment --recent-vs-any). A bounded first-in,
// first-out store shared by the graph's workers; it holds private copies, since the sample
// that goes on down the chain may be changed in place. With `shared` pixels (the chain plans
// them, AugmentContext::plan_pixels: nothing writes into a decoded image) no copy is made.
#include <atomic>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "yoloflow/sample.h"

namespace yoloflow::core {

class RecentImages {
 public:
  // Empties the store and sets how many samples it keeps (0: none).
  void reset(std::size_t capacity);
  // Keeps a copy of `sample` as the source's sample `index`, dropping the oldest when full;
  // nothing until someone asked for a sample (get), so a chain that loads no other samples
  // pays no copies.
  void put(std::size_t index, const Sample& sample, bool shared = false);
  // A copy of the kept sample `index` (its pixels shared with the store when `shared`), or nothing.
  std::optional<Sample> get(std::size_t index, bool shared = false) const;
  // Whether anyone asked for a sample yet.
  bool wanted() const { return asked_.load(std::memory_order_relaxed); }

 private:
  mutable std::atomic<bool> asked_{false};
  mutable std::mutex mutex_;
  std::size_t capacity_ = 0;
  std::deque<std::size_t> order_;  // oldest first
  std::unordered_map<std::size_t, std::shared_ptr<const Sample>> samples_;
};

}  // namespace yoloflow::core
