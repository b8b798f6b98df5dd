#pragma once
// NVML, loaded at run time with dlopen: the plugin links no driver library, so it loads (and
// the run goes on) on machines without an NVIDIA driver.
#include <memory>
#include <string>

#include "device_choice.h"
#include "gpu_recorder.h"

namespace yoloflow::gpu_monitor {

struct OpenedSampler {
  std::unique_ptr<GpuSampler> sampler;  // null when NVML or the device is unavailable
  std::string description;              // "GPU 0 (NVIDIA H200)"
  std::string why_not;                  // why `sampler` is null
};
OpenedSampler open_nvml_sampler(const std::string& library, const DeviceChoice& device);

}  // namespace yoloflow::gpu_monitor
