#include "training/device/train_device.h"

#include <dlfcn.h>

#include <filesystem>
#include <string>

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include "yoloflow/error.h"
#include "yoloflow/log.h"

namespace yoloflow::core {

std::string blas_library() {
  // The library that provides sgemm_ to this process: LibTorch built against the system BLAS
  // (Debian's) calls whichever libblas.so.3 the alternatives system points at.
  void* sgemm = dlsym(RTLD_DEFAULT, "sgemm_");
  Dl_info info{};
  if (sgemm == nullptr || dladdr(sgemm, &info) == 0 || info.dli_fname == nullptr) return "";
  // libblas.so.3 is a link the alternatives system points: the file it reaches says which.
  std::error_code ec;
  const auto real = std::filesystem::canonical(info.dli_fname, ec);
  return ec ? std::string(info.dli_fname) : real.string();
}

void set_training_threads(const c10::Device& device, std::int64_t cpu_threads) {
  if (cpu_threads > 0 || device.is_cuda()) at::set_num_threads(cpu_threads > 0 ? static_cast<int>(cpu_threads) : 1);
  if (!device.is_cpu()) return;
  // Debian's LibTorch runs the convolutions of small batches through the BLAS: the reference
  // implementation (libblas3, in .../blas/) makes a batch of 4 at 160 train 4x slower per image
  // than OpenBLAS does (docs/performance.md, "CPU training").
  const std::string blas = blas_library();
  if (blas.find("/blas/libblas.so") != std::string::npos) {
    YF_LOG_WARN("train: the BLAS LibTorch calls is the reference implementation (" << blas
                << "), which makes CPU training of small batches several times slower; install OpenBLAS "
                   "(apt install libopenblas0-openmp)");
  }
}

void set_cuda_kernels(const c10::Device& device, bool cudnn_benchmark, bool tf32) {
  if (!device.is_cuda()) return;
  at::globalContext().setBenchmarkCuDNN(cudnn_benchmark);
  at::globalContext().setAllowTF32CuDNN(tf32);
}

}  // namespace yoloflow::core
