#pragma once
// The few LibTorch API differences between 1.13 (Debian's CPU build) and 2.x (the GPU
// machine) that yoloflow code meets: autocast state, and multi-tensor ops taking a 0-dim
// tensor (a device-side scalar, read without a host synchronisation).
#include <vector>

#include <ATen/autocast_mode.h>
#include <torch/torch.h>
#include <torch/version.h>

#define YOLOFLOW_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||           \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace yoloflow::compat {

// ---- autocast ---------------------------------------------------------------------------
// 2.4 introduced the device-type API and deprecated the per-device functions of 1.13.

inline bool autocast_enabled(c10::DeviceType device) {
#if YOLOFLOW_TORCH_AT_LEAST(2, 4)
  return at::autocast::is_autocast_enabled(device);
#else
  if (device == c10::DeviceType::CPU) return at::autocast::is_cpu_enabled();
  if (device == c10::DeviceType::CUDA) return at::autocast::is_enabled();
  return false;
#endif
}

inline void set_autocast_enabled(c10::DeviceType device, bool enabled) {
#if YOLOFLOW_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_enabled(device, enabled);
#else
  if (device == c10::DeviceType::CPU) at::autocast::set_cpu_enabled(enabled);
  if (device == c10::DeviceType::CUDA) at::autocast::set_enabled(enabled);
#endif
}

inline at::ScalarType autocast_dtype(c10::DeviceType device) {
#if YOLOFLOW_TORCH_AT_LEAST(2, 4)
  return at::autocast::get_autocast_dtype(device);
#else
  if (device == c10::DeviceType::CPU) return at::autocast::get_autocast_cpu_dtype();
  return at::autocast::get_autocast_gpu_dtype();
#endif
}

inline void set_autocast_dtype(c10::DeviceType device, at::ScalarType dtype) {
#if YOLOFLOW_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_dtype(device, dtype);
#else
  if (device == c10::DeviceType::CPU) at::autocast::set_autocast_cpu_dtype(dtype);
  if (device == c10::DeviceType::CUDA) at::autocast::set_autocast_gpu_dtype(dtype);
#endif
}

// Enables autocast for one device type with `dtype` while alive (or disables it when
// `enabled` is false) and restores the previous state, as Python's torch.autocast does:
// the cast cache is cleared when the outermost region ends.
class AutocastGuard {
 public:
  AutocastGuard(c10::DeviceType device, bool enabled, at::ScalarType dtype)
      : device_(device),
        prev_enabled_(autocast_enabled(device)),
        prev_dtype_(autocast_dtype(device)),
        prev_cache_(at::autocast::is_autocast_cache_enabled()) {
    set_autocast_enabled(device_, enabled);
    if (enabled) set_autocast_dtype(device_, dtype);
    at::autocast::set_autocast_cache_enabled(true);
    at::autocast::increment_nesting();
  }
  ~AutocastGuard() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    set_autocast_enabled(device_, prev_enabled_);
    set_autocast_dtype(device_, prev_dtype_);
    at::autocast::set_autocast_cache_enabled(prev_cache_);
  }
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  c10::DeviceType device_;
  bool prev_enabled_;
  at::ScalarType prev_dtype_;
  bool prev_cache_;
};

// ---- multi-tensor ops with a 0-dim tensor operand ---------------------------------------
// 2.1 added _foreach_mul_(TensorList, Tensor); before, one kernel per tensor (CPU builds).

inline void foreach_mul_(at::TensorList tensors, const at::Tensor& scalar) {
  if (tensors.empty()) return;
#if YOLOFLOW_TORCH_AT_LEAST(2, 1)
  at::_foreach_mul_(tensors, scalar);
#else
  for (const auto& t : tensors) const_cast<at::Tensor&>(t).mul_(scalar);
#endif
}

inline std::vector<at::Tensor> foreach_mul(at::TensorList tensors, const at::Tensor& scalar) {
  if (tensors.empty()) return {};
#if YOLOFLOW_TORCH_AT_LEAST(2, 1)
  return at::_foreach_mul(tensors, scalar);
#else
  std::vector<at::Tensor> out;
  out.reserve(tensors.size());
  for (const auto& t : tensors) out.push_back(t.mul(scalar));
  return out;
#endif
}

}  // namespace yoloflow::compat
