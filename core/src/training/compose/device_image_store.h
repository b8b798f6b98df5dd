#pragma once
// The training device's image cache: the decoded training images (at the epoch's image size, as
// the source gives them) kept in one block of device memory beside their annotations, so that
// while the chain plans its pixels a kept image is neither read from its file nor decoded again,
// and not uploaded again: the composer reads it where it is. Without a RAM cache, decoding is what
// sets the pace on a machine with few cores (bench/gpu/planned-pixels.sh, its `kept` run).
//
// It opens once the step's own memory is known (after the first epoch and its validation: the
// captured step's pool, validation's activations and auto batch's choice are then reserved), with
// a block sized from the device's free memory less a margin (at most half the device), never more
// than the dataset needs.
// Images are added as the workers load them until the block is full and are never dropped, so a
// sample the store handed out stays valid for the whole run. The workers copy the pixels on
// streams of their own and wait for the copy before an image is handed out.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include <opencv2/core.hpp>
#include <torch/torch.h>

#include "runtime/graph/source_image_store.h"

namespace yoloflow::core {

class DeviceImageStore final : public SourceImageStore {
 public:
  explicit DeviceImageStore(const torch::Device& device);
  ~DeviceImageStore() override;

  // Bytes a block for `images` images of at most `imgsz` x `imgsz` needs.
  static std::size_t bytes_for(std::size_t images, int imgsz);
  // The bytes the device can give the store now: on CUDA, bytes_allowed() of its free and total
  // memory, the caching allocator's reserved bytes and the run's cuda_memory_fraction (0 = no
  // cap); on the CPU, half the memory available to this process.
  static std::size_t free_bytes(const torch::Device& device, double memory_fraction = 0.0);
  // What a block may take of a device with `device_free` of `device_total` bytes free while the
  // allocator holds `reserved` (the step's and validation's memory, reused by them): the room left
  // under the allocator's cap (the total, or `memory_fraction` of it: the block counts against
  // it too) and on the device, less max(2 GiB, a tenth of the cap) for what the run allocates
  // later, at most half the device's total so a second run on it keeps room.
  static std::size_t bytes_allowed(std::size_t device_free, std::size_t device_total, std::size_t reserved,
                                   double memory_fraction);
  // Allocates the block (`bytes`) and starts keeping images; once. False (nothing kept) when the
  // allocation fails.
  bool open(std::size_t bytes);
  bool opened() const { return block_bytes_ > 0; }
  const torch::Device& device() const { return device_; }

  std::optional<Sample> get(const std::string& key, std::size_t index) const override;
  void offer(const std::string& key, std::size_t index, const Sample& sample) override;

  // Whether `image`'s pixels are in the block (the composer then reads them there).
  bool holds(const cv::Mat& image) const;
  std::size_t images() const;
  std::size_t bytes_used() const { return used_.load(); }
  std::size_t bytes_reserved() const { return block_bytes_; }
  // Whether an image did not fit any more.
  bool full() const { return full_.load(); }

 private:
  struct Kept {
    Sample annotations;  // the source's sample without its pixels
    std::size_t offset = 0;
    int rows = 0, cols = 0;
  };
  torch::Device device_;
  torch::Tensor block_;
  std::uint8_t* base_ = nullptr;
  std::size_t block_bytes_ = 0;
  std::atomic<std::size_t> used_{0};
  std::atomic<bool> full_{false};
  mutable std::shared_mutex mutex_;
  std::string key_;  // the images' key: the first one offered
  std::unordered_map<std::size_t, Kept> kept_;
  std::unordered_set<std::size_t> copying_;
};

}  // namespace yoloflow::core
