#pragma once
// How the graph's error messages name a stage and a sample, wherever samples are made
// (the graph runner, AugmentedSamples for preview and auto batch).
#include <cstddef>
#include <string>

#include "runtime/pipeline/pipeline.h"

namespace yoloflow::core {

// "stage 'mosaic' (augmentation 'mosaic', .../libyoloflow_mosaic.so): the plugin's library"
inline std::string stage_text(const StageSpec& spec) {
  return "stage '" + spec.name + "' (" + spec.label() + ", " + spec.file + ")";
}

// "sample 3 (images/a.jpg)"; the path is left out when unknown.
inline std::string sample_text(std::size_t index, const std::string& path) {
  return "sample " + std::to_string(index) + (path.empty() ? "" : " (" + path + ")");
}

}  // namespace yoloflow::core
