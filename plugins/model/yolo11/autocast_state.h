#pragma once
// Autocast on/off and dtype for CPU and CUDA, captured and re-applied: the checkpoint rerun
// in backward (which runs on an autograd thread) must cast exactly as the forward did.
#include <torch/torch.h>

#include "yoloflow/torch_compat.h"

namespace yoloflow::yolo11 {

struct AutocastState {
  bool cuda = false, cpu = false;
  at::ScalarType cuda_dtype = at::kHalf, cpu_dtype = at::kBFloat16;

  static AutocastState capture() {
    AutocastState s;
    s.cuda = compat::autocast_enabled(at::kCUDA);
    s.cpu = compat::autocast_enabled(at::kCPU);
    s.cuda_dtype = compat::autocast_dtype(at::kCUDA);
    s.cpu_dtype = compat::autocast_dtype(at::kCPU);
    return s;
  }

  void apply() const {
    compat::set_autocast_enabled(at::kCUDA, cuda);
    compat::set_autocast_enabled(at::kCPU, cpu);
    compat::set_autocast_dtype(at::kCUDA, cuda_dtype);
    compat::set_autocast_dtype(at::kCPU, cpu_dtype);
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
