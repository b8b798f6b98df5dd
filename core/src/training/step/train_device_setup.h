#pragma once
// The train sink's device, chosen and set up the one way a training step runs on it: by the
// trainer before it builds anything, and by auto batch before it profiles the step.
#include <string>

#include <c10/core/Device.h>

#include "yoloflow/params.h"

namespace yoloflow::core {

// The sink's `device`, else `fallback` (the command's --device, else the pipeline's); in data
// parallel, this rank's. Counts devices but creates no CUDA context.
c10::Device train_device_of(const Params& sink, const std::string& fallback);

// Before the first CUDA context (the allocator reads its configuration then): the allocator's
// `alloc_conf` (the sink's cuda_alloc_conf, or what auto batch chose for it), LibTorch's CPU
// threads (`cpu_threads`) and the memory cap (`cuda_memory_fraction`), each error naming the
// sink's parameter.
void set_up_train_device(const c10::Device& device, const Params& sink, const std::string& alloc_conf);

}  // namespace yoloflow::core
