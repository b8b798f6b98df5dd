#include "runtime/graph/recent_images.h"

namespace yoloflow::core {

namespace {

// A copy of `sample` that shares no pixels with it.
Sample deep_copy(const Sample& sample) {
  Sample copy = sample;
  copy.image = sample.image.clone();
  return copy;
}

}  // namespace

void RecentImages::reset(std::size_t capacity) {
  std::lock_guard<std::mutex> lock(mutex_);
  capacity_ = capacity;
  order_.clear();
  samples_.clear();
}

void RecentImages::put(std::size_t index, const Sample& sample, bool shared) {
  if (!asked_.load(std::memory_order_relaxed)) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (capacity_ == 0 || samples_.count(index) != 0) return;
  }
  auto copy = std::make_shared<const Sample>(shared ? sample : deep_copy(sample));  // outside the lock: ~1 MB
  std::lock_guard<std::mutex> lock(mutex_);
  if (capacity_ == 0 || !samples_.emplace(index, std::move(copy)).second) return;
  order_.push_back(index);
  while (order_.size() > capacity_) {
    samples_.erase(order_.front());
    order_.pop_front();
  }
}

std::optional<Sample> RecentImages::get(std::size_t index, bool shared) const {
  asked_.store(true, std::memory_order_relaxed);
  std::shared_ptr<const Sample> kept;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = samples_.find(index);
    if (it == samples_.end()) return std::nullopt;
    kept = it->second;
  }
  return shared ? *kept : deep_copy(*kept);
}

}  // namespace yoloflow::core
