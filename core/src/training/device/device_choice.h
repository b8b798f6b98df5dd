#pragma once
// The device a command or sink runs on, from a user's setting, read by the one device reader
// (runtime/pipeline/device_word.h): "auto" (or "", a setting not given) = CUDA when LibTorch sees
// a device, else the CPU; "cpu", "cuda", "cuda:N" (and Ultralytics' N, -1) as written. A word
// that is no device yoloflow runs on (mps, tpu, cuda:x), or a CUDA device LibTorch does not see,
// is an InvalidInput naming `option` (the parameter or command-line option the value came from).
#include <string>

#include <c10/core/Device.h>

namespace yoloflow::core {

c10::Device pick_device(const std::string& wanted, const std::string& option);

// The same check without a device made: throws InvalidInput as pick_device does, so that a command
// refuses a --device before it reads anything.
void check_device(const std::string& wanted, const std::string& option);

}  // namespace yoloflow::core
