#include "training/device/cuda_memory.h"

#include <cstdlib>
#include <memory>

#include "yoloflow/error.h"
#include "yoloflow/log.h"
#include "yoloflow/torch_compat.h"

#ifdef YOLOFLOW_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace yoloflow::core {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr const char* kAllocConfVar = "PYTORCH_CUDA_ALLOC_CONF";

#ifdef YOLOFLOW_WITH_CUDA
// A CUDA context exists once anything touched a device (a tensor, a kernel); device counting
// alone creates none. The allocator has read its configuration by then.
bool cuda_initialised() {
  const auto count = c10::cuda::device_count();
  for (c10::DeviceIndex i = 0; i < static_cast<c10::DeviceIndex>(count); ++i) {
    if (at::detail::getCUDAHooks().hasPrimaryContext(i)) return true;
  }
  return false;
}

int device_index(const c10::Device& device) { return device.has_index() ? device.index() : c10::cuda::current_device(); }
#endif

}  // namespace

std::string expandable_segments_conf() {
#if defined(YOLOFLOW_WITH_CUDA) && YOLOFLOW_TORCH_AT_LEAST(2, 1)
  return "expandable_segments:True";
#else
  return {};  // LibTorch before 2.1 has no expandable segments (its allocator refuses the option)
#endif
}

void apply_cuda_alloc_conf(const std::string& requested, const std::string& json_path, const c10::Device& device) {
  const char* current = std::getenv(kAllocConfVar);
  std::string conf = requested;
  if (conf == "auto") {
    if (!device.is_cuda()) return;
    // What the user set wins; too late is no error for a default.
    conf = expandable_segments_conf();
    if (conf.empty() || current != nullptr) return;
#ifdef YOLOFLOW_WITH_CUDA
    if (cuda_initialised()) {
      YF_LOG_INFO(json_path << ": \"auto\" left the CUDA allocator as it was (CUDA was initialised before this stage)");
      return;
    }
#endif
  }
  if (conf.empty()) return;
  if (current != nullptr && conf == current) return;  // already in effect (e.g. set by the shell)
#ifdef YOLOFLOW_WITH_CUDA
  if (cuda_initialised()) {
    throw InvalidInput(json_path + ": \"" + conf + "\" cannot take effect: CUDA was already initialised in this " +
                       "process, and its allocator read " + kAllocConfVar + " (" +
                       (current != nullptr ? "\"" + std::string(current) + "\"" : std::string("unset")) +
                       ") then. Set " + kAllocConfVar + "=" + conf + " in the environment of `yoloflow` instead.");
  }
#endif
  if (current != nullptr) {
    YF_LOG_WARN(json_path << ": " << kAllocConfVar << " was \"" << current << "\" in the environment; using \"" << conf
                          << "\"");
  }
  ::setenv(kAllocConfVar, conf.c_str(), 1);
  YF_LOG_INFO("CUDA allocator: " << kAllocConfVar << "=" << conf);
}

void set_cuda_memory_fraction(const c10::Device& device, double fraction) {
  if (fraction <= 0) return;
  if (!device.is_cuda()) {
    YF_LOG_WARN("cuda_memory_fraction " << fraction << " ignored: training on " << device.str());
    return;
  }
#ifdef YOLOFLOW_WITH_CUDA
  const int index = device_index(device);
  // The allocator's per-device state exists once the device is initialised (as Python's
  // set_per_process_memory_fraction does first): creating a tensor there does it.
  (void)at::empty({1}, at::TensorOptions().device(c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(index))));
  c10::cuda::CUDACachingAllocator::setMemoryFraction(fraction, static_cast<c10::DeviceIndex>(index));
  YF_LOG_INFO("CUDA allocator: at most " << fraction << " of " << device.str() << "'s memory");
#endif
}

void release_cached_cuda_memory(const c10::Device& device) {
#ifdef YOLOFLOW_WITH_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::emptyCache();
#else
  (void)device;
#endif
}

std::optional<CudaMemoryStats> take_cuda_memory_stats(const c10::Device& device) {
  if (!device.is_cuda()) return std::nullopt;
#ifdef YOLOFLOW_WITH_CUDA
  namespace alloc = c10::cuda::CUDACachingAllocator;
  const int index = device_index(device);
  // DeviceStats moved to c10::CachingDeviceAllocator in 2.x; its fields keep their names, and
  // index 0 of each StatArray is StatType::AGGREGATE (all pools) in both. Read through `auto`
  // and convert, so either version's integer types fit.
  const auto stats = alloc::getDeviceStats(static_cast<c10::DeviceIndex>(index));
  const auto& allocated = stats.allocated_bytes[0];
  const auto& reserved = stats.reserved_bytes[0];
  CudaMemoryStats s;
  s.peak_allocated_gib = static_cast<double>(allocated.peak) / kGiB;
  s.reserved_gib = static_cast<double>(reserved.current) / kGiB;
  s.peak_reserved_gib = static_cast<double>(reserved.peak) / kGiB;
  s.fragmentation_gib = static_cast<double>(reserved.current - allocated.current) / kGiB;
  s.num_ooms = static_cast<double>(stats.num_ooms);
  alloc::resetPeakStats(static_cast<c10::DeviceIndex>(index));
  return s;
#else
  return std::nullopt;
#endif
}

PixelAllocator pinned_pixel_allocator(const c10::Device& device) {
  if (!device.is_cuda()) return {};
#ifdef YOLOFLOW_WITH_CUDA
  return [](std::size_t bytes) {
    // The tensor owns the block (and returns it to the allocator's cache when the batch's
    // last user lets go); the batch points into it.
    auto block = std::make_shared<at::Tensor>(at::empty(
        {static_cast<std::int64_t>(bytes)}, at::TensorOptions().dtype(at::kByte).pinned_memory(true)));
    return std::shared_ptr<std::uint8_t>(block, block->data_ptr<std::uint8_t>());
  };
#else
  return {};
#endif
}

std::optional<double> cuda_memory_capacity_bytes(const c10::Device& device, double memory_fraction) {
  if (!device.is_cuda()) return std::nullopt;
#ifdef YOLOFLOW_WITH_CUDA
  const auto* props = at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(device_index(device)));
  const double total = static_cast<double>(props->totalGlobalMem);
  return memory_fraction > 0 ? total * memory_fraction : total;
#else
  (void)memory_fraction;
  return std::nullopt;
#endif
}

void restart_cuda_peak(const c10::Device& device) {
#ifdef YOLOFLOW_WITH_CUDA
  if (!device.is_cuda()) return;
  c10::cuda::CUDACachingAllocator::emptyCache();
  c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(device_index(device)));
#else
  (void)device;
#endif
}

namespace {
// The allocator's reserved bytes (tensors + cache) on `device`: now, or their peak since the last
// restart.
std::optional<double> reserved_bytes(const c10::Device& device, bool peak) {
  if (!device.is_cuda()) return std::nullopt;
#ifdef YOLOFLOW_WITH_CUDA
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device_index(device)));
  const auto& reserved = stats.reserved_bytes[0];  // [0]: StatType::AGGREGATE
  return static_cast<double>(peak ? reserved.peak : reserved.current);
#else
  (void)peak;
  return std::nullopt;
#endif
}
}  // namespace

std::optional<double> cuda_peak_reserved_bytes(const c10::Device& device) { return reserved_bytes(device, true); }

std::optional<double> cuda_reserved_bytes(const c10::Device& device) { return reserved_bytes(device, false); }

}  // namespace yoloflow::core
