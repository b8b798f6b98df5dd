#pragma once
// Architecture names as Ultralytics users write them: "yolo11n" is model plugin yolo11 at scale
// n; "yolo11n-seg" the same at task segment (-seg, -pose, -obb, -cls: Ultralytics' suffixes for
// its segment, pose, obb and classify tasks). A model yaml's own scale, other multiples than the
// letter's, follows as its scales row writes it: "yolo11n[0.33,0.25,1024]" (depth, width,
// max_channels: the plugin's depth_multiple, width_multiple and max_channels). One reading for the model= word, the model factory
// and checkpoints, so that every place accepts the same names.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/plugin/registry.h"

namespace yoloflow::core {

struct ArchitectureName {
  std::string plugin;  // a registered model plugin
  std::string scale;   // one of its `scale` choices, or empty
  std::string task;    // one of its `task` choices (its default without a suffix); empty when it has none
  // [depth, width, max_channels] after the name; empty for the scale's own. Only for a plugin
  // with those parameters (has_multiples), whose name without them means the scale's.
  std::vector<double> multiples;
  bool has_multiples = false;
};

// The Ultralytics suffix of a task ("segment" -> "-seg"); "" for detect and unknown tasks.
std::string task_suffix(const std::string& task);

// `word` as a model plugin's name, optionally followed by a scale letter it lists and a task
// suffix whose task it lists; nullopt when no registered model reads it so.
std::optional<ArchitectureName> parse_architecture(const Registry& registry, const std::string& word);

// The plugin's parameters the name sets: {"scale": ..., "task": ...} (only those it names), and
// for a plugin with multiples, depth_multiple, width_multiple and max_channels (0: the scale's).
nlohmann::json architecture_params(const ArchitectureName& name);

// A model yaml's scales row as the name writes it after the plugin and letter:
// "[0.75,0.375,768]" (what parse_architecture reads back).
std::string multiples_suffix(double depth, double width, std::int64_t max_channels);

// Whether a scales row is one the yolo11 plugin builds: depth and width in (0, 4] (its
// depth_multiple and width_multiple ranges; more makes layers of thousands of channels more),
// max_channels a count from 1 to 1,000,000.
bool buildable_multiples(double depth, double width, double max_channels);

// Every architecture name the registry's models take ("yolo11n, yolo11n-seg, ..."), for errors.
std::string known_architectures(const Registry& registry);

}  // namespace yoloflow::core
