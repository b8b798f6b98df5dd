#include "training/device/device_choice.h"

#include <torch/cuda.h>

#include "runtime/pipeline/device_word.h"
#include "yoloflow/error.h"

namespace yoloflow::core {

c10::Device pick_device(const std::string& wanted, const std::string& option) {
  std::string device = "auto";
  if (!wanted.empty() && !read_device_word(wanted, device)) throw InvalidInput(device_refusal(option, wanted));
  if (device == "auto") return torch::cuda::is_available() ? c10::Device(c10::kCUDA) : c10::Device(c10::kCPU);
  if (device == "cpu") return c10::Device(c10::kCPU);
  // cuda or cuda:N, as read_device_word spells them.
  if (!torch::cuda::is_available()) {
    throw InvalidInput(option + " " + wanted + ": LibTorch sees no CUDA device (use cpu)");
  }
  const c10::Device d(device);
  if (d.has_index() && d.index() >= static_cast<int>(torch::cuda::device_count())) {
    throw InvalidInput(option + " " + wanted + ": LibTorch sees " + std::to_string(torch::cuda::device_count()) +
                       " CUDA device(s), cuda:0 to cuda:" + std::to_string(torch::cuda::device_count() - 1));
  }
  return d;
}

void check_device(const std::string& wanted, const std::string& option) { (void)pick_device(wanted, option); }

}  // namespace yoloflow::core
