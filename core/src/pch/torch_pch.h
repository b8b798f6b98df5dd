// Precompiled header of torch-heavy targets. LibTorch's headers dominate compile time;
// parsing them once per target keeps warm rebuilds quick. Never include spdlog here
// (see yoloflow/log.h for why).
#pragma once
#include <torch/torch.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>
