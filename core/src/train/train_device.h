#pragma once
// The device the train sink trains on, from its `device` parameter (else the run's):
// "auto" = CUDA when LibTorch sees a device, else the CPU; a CUDA device asked for where there
// is none is an error. Auto batch profiles on the same device before the sink exists.
#include <string>

#include <c10/core/Device.h>

namespace yoloflow::core {

c10::Device pick_train_device(const std::string& wanted);

}  // namespace yoloflow::core
