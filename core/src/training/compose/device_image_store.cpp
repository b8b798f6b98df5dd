#include "training/compose/device_image_store.h"

#include <unistd.h>

#include <algorithm>
#include <mutex>

#include "training/device/cuda_memory.h"
#include "yoloflow/log.h"

#ifdef YOLOFLOW_COMPOSE_KERNELS
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#endif

namespace yoloflow::core {
namespace {

constexpr std::size_t kGiB = std::size_t{1} << 30;

#ifdef YOLOFLOW_COMPOSE_KERNELS
// A worker's copies may run while the training thread captures its step into a CUDA graph: this
// thread's CUDA calls are then allowed (they are on a stream of their own, not captured).
class RelaxedCapture {
 public:
  RelaxedCapture() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  ~RelaxedCapture() { cudaThreadExchangeStreamCaptureMode(&mode_); }

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};
#endif

// `from` (host memory) into `to` (on `device`), complete when it returns; on CUDA on a stream of
// the pool, not the training stream.
void copy_pixels(const torch::Device& device, torch::Tensor to, const torch::Tensor& from) {
#ifdef YOLOFLOW_COMPOSE_KERNELS
  if (device.is_cuda()) {
    const RelaxedCapture relaxed;
    const c10::cuda::CUDAStreamGuard stream(at::cuda::getStreamFromPool(false, device.index()));
    to.copy_(from);  // from pageable memory: returns once the pixels are on the device
    at::cuda::getCurrentCUDAStream(device.index()).synchronize();
    return;
  }
#endif
  to.copy_(from);
}

}  // namespace

DeviceImageStore::DeviceImageStore(const torch::Device& device) : device_(device) {}
DeviceImageStore::~DeviceImageStore() = default;

std::size_t DeviceImageStore::bytes_for(std::size_t images, int imgsz) {
  return images * static_cast<std::size_t>(std::max(imgsz, 1)) * static_cast<std::size_t>(std::max(imgsz, 1)) * 3;
}

std::size_t DeviceImageStore::bytes_allowed(std::size_t device_free, std::size_t device_total, std::size_t reserved,
                                            double memory_fraction) {
  const std::size_t cap = memory_fraction > 0.0 && memory_fraction < 1.0
                              ? static_cast<std::size_t>(static_cast<double>(device_total) * memory_fraction)
                              : device_total;
  const std::size_t room = std::min(device_free, cap > reserved ? cap - reserved : 0);
  const std::size_t margin = std::max<std::size_t>(2 * kGiB, cap / 10);
  return std::min(room > margin ? room - margin : 0, device_total / 2);
}

std::size_t DeviceImageStore::free_bytes(const torch::Device& device, double memory_fraction) {
#ifdef YOLOFLOW_COMPOSE_KERNELS
  if (device.is_cuda()) {
    const c10::cuda::CUDAGuard guard(device);
    std::size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) return 0;
    const auto reserved = cuda_reserved_bytes(device);
    return bytes_allowed(free, total, reserved ? static_cast<std::size_t>(*reserved) : 0, memory_fraction);
  }
#else
  (void)memory_fraction;
#endif
  if (device.is_cpu()) {
    const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) / 2 : 0;
  }
  return 0;
}

bool DeviceImageStore::open(std::size_t bytes) {
  if (opened() || bytes == 0) return false;
  try {
    block_ = torch::empty({static_cast<std::int64_t>(bytes)}, torch::TensorOptions().dtype(torch::kUInt8).device(device_));
  } catch (const std::exception&) {
    YF_LOG_WARN("device image cache: " << bytes << " bytes could not be allocated; images are decoded each epoch");
    return false;
  }
  std::unique_lock<std::shared_mutex> lock(mutex_);  // the workers read these under the lock
  base_ = block_.data_ptr<std::uint8_t>();
  block_bytes_ = bytes;
  return true;
}

std::optional<Sample> DeviceImageStore::get(const std::string& key, std::size_t index) const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  if (key != key_) return std::nullopt;
  const auto it = kept_.find(index);
  if (it == kept_.end()) return std::nullopt;
  Sample s = it->second.annotations;
  s.image = cv::Mat(it->second.rows, it->second.cols, CV_8UC3, base_ + it->second.offset);
  return s;
}

void DeviceImageStore::offer(const std::string& key, std::size_t index, const Sample& sample) {
  if (full_.load(std::memory_order_relaxed)) return;
  const cv::Mat& image = sample.image;
  // Only what the composer reads as it is: an 8-bit BGR image, annotations without masks (a mask
  // is an image of its own on the host).
  if (image.empty() || image.type() != CV_8UC3 || !sample.masks.empty() || sample.pixel_plan) return;
  const std::size_t bytes = static_cast<std::size_t>(image.rows) * image.cols * 3;
  std::size_t offset = 0;
  {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    if (block_bytes_ == 0) return;  // not open
    if (key_.empty()) key_ = key;
    if (key != key_ || kept_.count(index) != 0 || copying_.count(index) != 0) return;
    offset = used_.load();
    if (offset + bytes > block_bytes_) {
      full_ = true;
      YF_LOG_INFO("device image cache: full at " << kept_.size() << " images (" << offset << " of " << block_bytes_
                                                 << " bytes); the others are decoded each epoch");
      return;
    }
    used_ = offset + bytes;
    copying_.insert(index);
  }
  bool copied = false;
  try {
    const torch::Tensor from = torch::from_blob(image.data, {image.rows, image.cols * 3},
                                                {static_cast<std::int64_t>(image.step[0]), 1}, torch::kUInt8);
    const torch::Tensor to = block_.narrow(0, static_cast<std::int64_t>(offset), static_cast<std::int64_t>(bytes))
                           .view({image.rows, image.cols * 3});
    copy_pixels(device_, to, from);
    copied = true;
  } catch (const std::exception& e) {
    // LibTorch's errors carry a backtrace in what(): the line keeps the message alone.
    const auto* torch_error = dynamic_cast<const c10::Error*>(&e);
    YF_LOG_WARN("device image cache: copying " << sample.path << " failed ("
                                               << (torch_error != nullptr ? torch_error->what_without_backtrace() : e.what())
                                               << "); it is decoded each epoch");
  }
  std::unique_lock<std::shared_mutex> lock(mutex_);
  copying_.erase(index);
  if (!copied) return;  // its bytes stay unused: the block is never compacted
  Kept k;
  k.annotations = sample;
  k.annotations.image = cv::Mat();
  k.offset = offset;
  k.rows = image.rows;
  k.cols = image.cols;
  kept_.emplace(index, std::move(k));
}

bool DeviceImageStore::holds(const cv::Mat& image) const {
  return base_ != nullptr && image.data >= base_ && image.data < base_ + block_bytes_;
}

std::size_t DeviceImageStore::images() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return kept_.size();
}

}  // namespace yoloflow::core
