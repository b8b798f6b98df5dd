#pragma once
// Autocast on/off and dtype for CPU and CUDA, captured and re-applied: the checkpoint rerun
// in backward (which runs on an autograd thread) must cast exactly as the forward did.
// LibTorch 2.4 replaced the per-device functions with ones taking a DeviceType.
#include <ATen/autocast_mode.h>
#include <torch/torch.h>
#include <torch/version.h>

namespace yoloflow::yolo11 {

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define YOLOFLOW_AUTOCAST_DEVICE_API 1
#endif

struct AutocastState {
  bool cuda = false, cpu = false;
  at::ScalarType cuda_dtype = at::kHalf, cpu_dtype = at::kBFloat16;

  static AutocastState capture() {
    AutocastState s;
#ifdef YOLOFLOW_AUTOCAST_DEVICE_API
    s.cuda = at::autocast::is_autocast_enabled(at::kCUDA);
    s.cpu = at::autocast::is_autocast_enabled(at::kCPU);
    s.cuda_dtype = at::autocast::get_autocast_dtype(at::kCUDA);
    s.cpu_dtype = at::autocast::get_autocast_dtype(at::kCPU);
#else
    s.cuda = at::autocast::is_enabled();
    s.cpu = at::autocast::is_cpu_enabled();
    s.cuda_dtype = at::autocast::get_autocast_gpu_dtype();
    s.cpu_dtype = at::autocast::get_autocast_cpu_dtype();
#endif
    return s;
  }

  void apply() const {
#ifdef YOLOFLOW_AUTOCAST_DEVICE_API
    at::autocast::set_autocast_enabled(at::kCUDA, cuda);
    at::autocast::set_autocast_enabled(at::kCPU, cpu);
    at::autocast::set_autocast_dtype(at::kCUDA, cuda_dtype);
    at::autocast::set_autocast_dtype(at::kCPU, cpu_dtype);
#else
    at::autocast::set_enabled(cuda);
    at::autocast::set_cpu_enabled(cpu);
    at::autocast::set_autocast_gpu_dtype(cuda_dtype);
    at::autocast::set_autocast_cpu_dtype(cpu_dtype);
#endif
  }

  c10::IValue to_ivalue() const {
    return c10::List<std::int64_t>({cuda, cpu, static_cast<std::int64_t>(cuda_dtype),
                                    static_cast<std::int64_t>(cpu_dtype)});
  }
  static AutocastState from_ivalue(const c10::IValue& v) {
    const auto l = v.toIntList();
    AutocastState s;
    s.cuda = l.get(0) != 0;
    s.cpu = l.get(1) != 0;
    s.cuda_dtype = static_cast<at::ScalarType>(l.get(2));
    s.cpu_dtype = static_cast<at::ScalarType>(l.get(3));
    return s;
  }
};

// Applies a state for a scope, restoring the previous one after.
class AutocastGuard {
 public:
  explicit AutocastGuard(const AutocastState& s) : prev_(AutocastState::capture()) { s.apply(); }
  ~AutocastGuard() { prev_.apply(); }
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  AutocastState prev_;
};

}  // namespace yoloflow::yolo11
