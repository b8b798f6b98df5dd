#pragma once
// The CUDA caching allocator as the train sink sets it up and reports it. Every function is
// a no-op (or empty result) without CUDA: in a CPU-only build, or for a CPU device.
#include <optional>
#include <string>

#include <c10/core/Device.h>

#include "yoloflow/batcher.h"

namespace yoloflow::core {

// "expandable_segments:True" where LibTorch has expandable segments (2.1 and later, with
// CUDA), else empty.
std::string expandable_segments_conf();

// PYTORCH_CUDA_ALLOC_CONF for this process (e.g. "expandable_segments:True"), which the
// allocator reads once, when CUDA is first initialised. Empty = leave the environment as it
// is; "auto" = expandable_segments_conf() for a CUDA `device` unless the environment sets the
// variable or CUDA is already initialised (otherwise as empty). Throws InvalidInput naming `json_path` when an explicit
// value comes after a CUDA context exists (too late to take effect) and the environment holds
// another value.
void apply_cuda_alloc_conf(const std::string& conf, const std::string& json_path, const c10::Device& device);

// Caps what the caching allocator may reserve on `device` at `fraction` of its memory
// (0 = no cap); an allocation beyond it fails with an out-of-memory error as if the device were
// that small. Logs a warning and does nothing for a CPU device.
void set_cuda_memory_fraction(const c10::Device& device, double fraction);

// Returns the allocator's cached, unused blocks to the driver (after an out-of-memory error on
// `device`); nothing for a CPU device.
void release_cached_cuda_memory(const c10::Device& device);

// Batch pixel memory in pinned (page-locked) host memory from LibTorch's caching host
// allocator, for the batcher to collate into when training on `device`: the copy to the GPU
// then reads it where it is, with no pinned staging copy (39 MB per yolo11n batch of 32 at
// 640, several ms of one host thread per step). Empty for a CPU device or a build without CUDA.
PixelAllocator pinned_pixel_allocator(const c10::Device& device);

struct CudaMemoryStats {
  double peak_allocated_gib = 0;  // largest memory held by tensors since the last reading
  double reserved_gib = 0;        // memory the allocator holds now (tensors + cache)
  double peak_reserved_gib = 0;   // largest reserved since the last reading
  double fragmentation_gib = 0;   // reserved but not held by tensors now (cache, split blocks)
  double num_ooms = 0;            // allocator out-of-memory errors since the process started
};

// The allocator's statistics for `device`; the peaks restart from now. Empty for a CPU device.
std::optional<CudaMemoryStats> take_cuda_memory_stats(const c10::Device& device);

// Auto batch's measurement (auto_batch_profiler.h). Empty for a CPU device or without CUDA.
// The memory the caching allocator may use on `device`: its total memory, times the
// cuda_memory_fraction cap when one is set (setMemoryFraction).
std::optional<double> cuda_memory_capacity_bytes(const c10::Device& device, double memory_fraction);
// Returns cached blocks to the driver and restarts the peak statistics, so that the next
// reading is one step's own peak.
void restart_cuda_peak(const c10::Device& device);
// The memory the allocator holds reserved now (tensors + cache). Empty for a CPU device.
std::optional<double> cuda_reserved_bytes(const c10::Device& device);
// The most memory the allocator held reserved (tensors + cache) since restart_cuda_peak.
std::optional<double> cuda_peak_reserved_bytes(const c10::Device& device);

}  // namespace yoloflow::core
