#include "pixel_buffer_pool.h"

namespace yoloflow::plugins {

std::shared_ptr<std::uint8_t> PixelBufferPool::take(std::size_t bytes) {
  std::unique_ptr<std::uint8_t[]> buffer;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (bytes != bytes_) {
      free_.clear();  // another image or batch size: the old buffers no longer fit
      bytes_ = bytes;
    }
    if (!free_.empty()) {
      buffer = std::move(free_.back());
      free_.pop_back();
    }
  }
  if (!buffer) buffer.reset(new std::uint8_t[bytes]);
  // The deleter holds the pool only weakly: a batch may outlive the collate that made it.
  std::weak_ptr<PixelBufferPool> pool = weak_from_this();
  return std::shared_ptr<std::uint8_t>(buffer.release(), [pool, bytes](std::uint8_t* p) {
    if (auto alive = pool.lock()) {
      alive->give_back(p, bytes);
    } else {
      delete[] p;
    }
  });
}

void PixelBufferPool::give_back(std::uint8_t* p, std::size_t bytes) {
  std::unique_ptr<std::uint8_t[]> buffer(p);
  std::lock_guard<std::mutex> lock(mutex_);
  if (bytes == bytes_ && free_.size() < keep_) free_.push_back(std::move(buffer));
}

}  // namespace yoloflow::plugins
