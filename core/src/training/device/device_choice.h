#pragma once
// The device a command or sink runs on, from a user's setting: "auto" (or "") = CUDA when
// LibTorch sees a device, else the CPU; "cpu", "cuda", "cuda:N" as written. A CUDA device where
// LibTorch sees none, or a word that is no device, is an InvalidInput naming `option` (the
// parameter or command-line option the value came from).
#include <string>

#include <c10/core/Device.h>

namespace yoloflow::core {

c10::Device pick_device(const std::string& wanted, const std::string& option);

}  // namespace yoloflow::core
