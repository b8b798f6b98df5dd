#pragma once
// How an exported file lays out a head's outputs (HeadDescription::outputs): the per-anchor ones
// follow the class probabilities in output0, the per-image ones are the next outputs in order.
// One reading for the writer (onnx_export.cpp) and the reader (exported_model.cpp).
#include <cstdint>
#include <string>
#include <vector>

#include "yoloflow/head.h"

namespace yoloflow::core {

// Channels of output0 after the boxes and class probabilities.
inline std::int64_t per_anchor_channels(const HeadDescription& head) {
  std::int64_t c = 0;
  for (const auto& o : head.outputs) c += o.per_anchor ? o.channels : 0;
  return c;
}

// Names of the outputs after output0 (output1, output2, ...).
inline std::vector<std::string> per_image_outputs(const HeadDescription& head) {
  std::vector<std::string> names;
  for (const auto& o : head.outputs) {
    if (!o.per_anchor) names.push_back(o.name);
  }
  return names;
}

}  // namespace yoloflow::core
