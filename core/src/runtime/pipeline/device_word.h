#pragma once
// The one reader of a device as users write it: the pipeline's `device` setting, the `device=`
// word of every command, --device and a sweep's --devices. It knows the spelling only; whether
// this machine has the device is for the training library to say (training/device/device_choice.h).
#include <string>

namespace yoloflow::core {

// Reads `text` into the spelling LibTorch takes: "auto" (also Ultralytics' -1: CUDA when LibTorch
// sees a device, else the CPU), "cpu", "cuda", "cuda:N"; Ultralytics' bare index N is "cuda:N".
// Case does not matter. Returns false, with `canonical` untouched, for anything else (mps, tpu,
// cuda:x, -5, a list, ""): yoloflow runs on the CPU and on CUDA devices only. A setting left
// empty to mean "not given" (a sink's `device`) is for its reader to treat before calling this.
bool read_device_word(const std::string& text, std::string& canonical);

// The one line refusing `text` given as `option` ("device=", "--device", "stages.train.params.device"):
// "device=mps is not a device yoloflow runs on; the devices are cpu, cuda, cuda:N, ...".
std::string device_refusal(const std::string& option, const std::string& text);

}  // namespace yoloflow::core
