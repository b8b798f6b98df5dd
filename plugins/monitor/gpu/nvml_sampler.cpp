#include "nvml_sampler.h"

#include <dlfcn.h>

#include <type_traits>

namespace yoloflow::gpu_monitor {
namespace {

// The few NVML declarations used (nvml.h is not needed to build): ABI-stable since NVML 5.
using nvmlReturn_t = int;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
constexpr int NVML_CLOCK_SM = 1;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

class NvmlSampler final : public GpuSampler {
 public:
  ~NvmlSampler() override {
    if (shutdown_) shutdown_();
    if (handle_) dlclose(handle_);
  }

  // Empty string: ready; else why not.
  std::string open(const std::string& library, const DeviceChoice& device, std::string& description) {
    handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
      const char* e = dlerror();
      return "cannot load " + library + " (no NVIDIA driver on this machine?): " + (e ? e : "unknown error");
    }
    std::string missing;
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle_, name));
      if (!fn) missing += (missing.empty() ? "" : ", ") + std::string(name);
    };
    nvmlReturn_t (*init)() = nullptr;
    sym(init, "nvmlInit_v2");
    sym(shutdown_, "nvmlShutdown");
    sym(error_string_, "nvmlErrorString");
    sym(by_index_, "nvmlDeviceGetHandleByIndex_v2");
    sym(by_uuid_, "nvmlDeviceGetHandleByUUID");
    sym(get_name_, "nvmlDeviceGetName");
    sym(utilization_, "nvmlDeviceGetUtilizationRates");
    sym(memory_, "nvmlDeviceGetMemoryInfo");
    sym(power_, "nvmlDeviceGetPowerUsage");
    sym(clock_, "nvmlDeviceGetClockInfo");
    if (!missing.empty()) {
      shutdown_ = nullptr;
      return library + " lacks " + missing + " (driver too old?)";
    }
    if (const nvmlReturn_t r = init(); r != NVML_SUCCESS) {
      shutdown_ = nullptr;
      return "nvmlInit failed: " + error(r);
    }
    const nvmlReturn_t r = device.by_uuid ? by_uuid_(device.uuid.c_str(), &device_)
                                          : by_index_(static_cast<unsigned int>(device.nvml_index), &device_);
    const std::string which = device.by_uuid ? device.uuid : "NVML device " + std::to_string(device.nvml_index);
    if (r != NVML_SUCCESS) return "cannot open " + which + " (for cuda:" + std::to_string(device.cuda_index) + "): " + error(r);
    char name[96] = {};
    description = (device.by_uuid ? device.uuid : "GPU " + std::to_string(device.nvml_index));
    if (get_name_(device_, name, sizeof name - 1) == NVML_SUCCESS) description += std::string(" (") + name + ")";
    return "";
  }

  GpuReading read() override {
    GpuReading out;
    nvmlUtilization_t u{};
    if (utilization_(device_, &u) == NVML_SUCCESS) {
      out.util_percent = u.gpu;
      out.mem_util_percent = u.memory;
    }
    nvmlMemory_t m{};
    if (memory_(device_, &m) == NVML_SUCCESS) {
      out.mem_used_gib = static_cast<double>(m.used) / kGiB;
      out.mem_total_gib = static_cast<double>(m.total) / kGiB;
    }
    unsigned int milliwatts = 0;
    if (power_(device_, &milliwatts) == NVML_SUCCESS) out.power_w = milliwatts / 1000.0;
    unsigned int mhz = 0;
    if (clock_(device_, NVML_CLOCK_SM, &mhz) == NVML_SUCCESS) out.sm_clock_mhz = mhz;
    return out;
  }

 private:
  std::string error(nvmlReturn_t r) const {
    const char* s = error_string_ ? error_string_(r) : nullptr;
    return (s ? std::string(s) : std::string("error")) + " (" + std::to_string(r) + ")";
  }

  void* handle_ = nullptr;
  nvmlDevice_t device_ = nullptr;
  nvmlReturn_t (*shutdown_)() = nullptr;
  const char* (*error_string_)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*by_index_)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*by_uuid_)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*get_name_)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*utilization_)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*memory_)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*power_)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*clock_)(nvmlDevice_t, int, unsigned int*) = nullptr;
};

}  // namespace

OpenedSampler open_nvml_sampler(const std::string& library, const DeviceChoice& device) {
  OpenedSampler out;
  if (!device.error.empty()) {
    out.why_not = device.error;
    return out;
  }
  auto s = std::make_unique<NvmlSampler>();
  out.why_not = s->open(library, device, out.description);
  if (out.why_not.empty()) out.sampler = std::move(s);
  return out;
}

}  // namespace yoloflow::gpu_monitor
