#pragma once
// Creates a model component from an architecture name as users write it ("yolo11n"): a
// registered model plugin name followed by its scale letter, or a plugin name alone.
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
