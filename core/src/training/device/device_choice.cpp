#include "training/device/device_choice.h"

#include <c10/util/Exception.h>
#include <torch/cuda.h>

#include "yoloflow/error.h"

namespace yoloflow::core {

c10::Device pick_device(const std::string& wanted, const std::string& option) {
  if (wanted.empty() || wanted == "auto") {
    return torch::cuda::is_available() ? c10::Device(c10::kCUDA) : c10::Device(c10::kCPU);
  }
  try {
    c10::Device d(wanted);
    if (d.is_cuda() && !torch::cuda::is_available()) {
      throw InvalidInput(option + " " + wanted + ": LibTorch sees no CUDA device (use cpu)");
    }
    return d;
  } catch (const c10::Error&) {
    throw InvalidInput(option + " " + wanted + ": not a device (cpu, cuda or cuda:N)");
  }
}

}  // namespace yoloflow::core
