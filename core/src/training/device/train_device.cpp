#include "training/device/train_device.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include "yoloflow/error.h"

namespace yoloflow::core {

void set_training_threads(const c10::Device& device, std::int64_t cpu_threads) {
  if (cpu_threads > 0 || device.is_cuda()) at::set_num_threads(cpu_threads > 0 ? static_cast<int>(cpu_threads) : 1);
}

void set_cuda_kernels(const c10::Device& device, bool cudnn_benchmark, bool tf32) {
  if (!device.is_cuda()) return;
  at::globalContext().setBenchmarkCuDNN(cudnn_benchmark);
  at::globalContext().setAllowTF32CuDNN(tf32);
}

}  // namespace yoloflow::core
