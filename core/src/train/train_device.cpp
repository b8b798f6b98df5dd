#include "train/train_device.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
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

void set_training_threads(const c10::Device& device, std::int64_t cpu_threads) {
  if (cpu_threads > 0 || device.is_cuda()) at::set_num_threads(cpu_threads > 0 ? static_cast<int>(cpu_threads) : 1);
}

void set_cuda_kernels(const c10::Device& device, bool cudnn_benchmark, bool tf32) {
  if (!device.is_cuda()) return;
  at::globalContext().setBenchmarkCuDNN(cudnn_benchmark);
  at::globalContext().setAllowTF32CuDNN(tf32);
}

}  // namespace yoloflow::core
