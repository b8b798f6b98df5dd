#include "train/train_device.h"

#include <torch/cuda.h>

#include "yoloflow/error.h"

namespace yoloflow::core {

c10::Device pick_train_device(const std::string& wanted) {
  if (wanted.empty() || wanted == "auto") {
    return torch::cuda::is_available() ? c10::Device(c10::kCUDA) : c10::Device(c10::kCPU);
  }
  c10::Device d(wanted);
  if (d.is_cuda() && !torch::cuda::is_available()) {
    throw InvalidInput("device '" + wanted + "' asked for, but LibTorch sees no CUDA device");
  }
  return d;
}

}  // namespace yoloflow::core
