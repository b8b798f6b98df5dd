#include "training/step/train_device_setup.h"

#include "training/device/cuda_memory.h"
#include "training/device/device_choice.h"
#include "training/device/train_device.h"
#include "training/parallel/data_parallel.h"

namespace yoloflow::core {

c10::Device train_device_of(const Params& sink, const std::string& fallback) {
  const std::string wanted = sink.get_string("device").empty() ? fallback : sink.get_string("device");
  return dist::rank_device(pick_device(wanted, sink.where() + ".device"));
}

void set_up_train_device(const c10::Device& device, const Params& sink, const std::string& alloc_conf) {
  apply_cuda_alloc_conf(alloc_conf, sink.where() + ".cuda_alloc_conf", device);
  set_training_threads(device, sink.get_int("cpu_threads"));
  set_cuda_memory_fraction(device, sink.get_float("cuda_memory_fraction"));
}

}  // namespace yoloflow::core
