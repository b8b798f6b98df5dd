#pragma once
// Creates a model component from an architecture name as users write it ("yolo11n",
// "yolo11n-seg": runtime/pipeline/architecture_name.h).
#include <memory>
#include <string>

#include "runtime/plugin/registry.h"
#include "yoloflow/model.h"

namespace yoloflow::core {

// nc <= 0 keeps the plugin's default; `extra` adds other parameters (e.g. channels_last).
// Throws InvalidInput naming the known models.
std::unique_ptr<Model> create_model(const Registry& registry, const std::string& architecture, int nc,
                                    const json& extra = json::object());

}  // namespace yoloflow::core
