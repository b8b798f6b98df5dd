#pragma once
// Architecture names as Ultralytics users write them: "yolo11n" is model plugin yolo11 at scale
// n; "yolo11n-seg" the same at task segment (-seg, -pose, -obb, -cls: Ultralytics' suffixes for
// its segment, pose, obb and classify tasks). One reading for the model= word, the model factory
// and checkpoints, so that every place accepts the same names.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/plugin/registry.h"

namespace yoloflow::core {

struct ArchitectureName {
  std::string plugin;  // a registered model plugin
  std::string scale;   // one of its `scale` choices, or empty
  std::string task;    // one of its `task` choices (its default without a suffix); empty when it has none
};

// The Ultralytics suffix of a task ("segment" -> "-seg"); "" for detect and unknown tasks.
std::string task_suffix(const std::string& task);

// `word` as a model plugin's name, optionally followed by a scale letter it lists and a task
// suffix whose task it lists; nullopt when no registered model reads it so.
std::optional<ArchitectureName> parse_architecture(const Registry& registry, const std::string& word);

// The plugin's parameters the name sets: {"scale": ..., "task": ...} (only those it names).
nlohmann::json architecture_params(const ArchitectureName& name);

// Every architecture name the registry's models take ("yolo11n, yolo11n-seg, ..."), for errors.
std::string known_architectures(const Registry& registry);

}  // namespace yoloflow::core
