#include "runtime/pipeline/architecture_name.h"

#include <algorithm>
#include <utility>

#include "runtime/util/string_affixes.h"

namespace yoloflow::core {
namespace {

// Ultralytics' task names and the suffix of its model names for each.
const std::pair<const char*, const char*> kTaskSuffixes[] = {
    {"segment", "-seg"}, {"pose", "-pose"}, {"obb", "-obb"}, {"classify", "-cls"}};

std::vector<std::string> choices(const RegisteredComponent& rc, const char* param) {
  const ParamSpec* p = rc.info.schema.find(param);
  return p ? p->enum_choices : std::vector<std::string>{};
}

bool lists(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// `stem` (the name without a task suffix) as a plugin, or a plugin and its scale letter.
std::optional<ArchitectureName> plugin_and_scale(const Registry& registry, const std::string& stem) {
  if (registry.find(Kind::Model, stem)) return ArchitectureName{stem, "", ""};
  if (stem.size() < 2) return std::nullopt;
  const std::string base = stem.substr(0, stem.size() - 1), letter = stem.substr(stem.size() - 1);
  const RegisteredComponent* rc = registry.find(Kind::Model, base);
  if (rc && lists(choices(*rc, "scale"), letter)) return ArchitectureName{base, letter, ""};
  return std::nullopt;
}

}  // namespace

std::string task_suffix(const std::string& task) {
  for (const auto& [t, suffix] : kTaskSuffixes) {
    if (task == t) return suffix;
  }
  return "";
}

std::optional<ArchitectureName> parse_architecture(const Registry& registry, const std::string& word) {
  if (auto name = plugin_and_scale(registry, word)) {
    // No suffix names the plugin's default task (yolo11n is a detector even where the pipeline
    // said segment before), as Ultralytics reads its names.
    const ParamSpec* task = registry.find(Kind::Model, name->plugin)->info.schema.find("task");
    if (task && task->default_json.is_string()) name->task = task->default_json.get<std::string>();
    return name;
  }
  for (const auto& [task, suffix] : kTaskSuffixes) {
    if (!ends_with(word, suffix)) continue;
    auto name = plugin_and_scale(registry, word.substr(0, word.size() - std::string(suffix).size()));
    if (name && lists(choices(*registry.find(Kind::Model, name->plugin), "task"), task)) {
      name->task = task;
      return name;
    }
  }
  return std::nullopt;
}

nlohmann::json architecture_params(const ArchitectureName& name) {
  nlohmann::json params = nlohmann::json::object();
  if (!name.scale.empty()) params["scale"] = name.scale;
  if (!name.task.empty()) params["task"] = name.task;
  return params;
}

std::string known_architectures(const Registry& registry) {
  std::string known;
  for (const auto& n : registry.names(Kind::Model)) {
    const RegisteredComponent& rc = *registry.find(Kind::Model, n);
    std::vector<std::string> scales = choices(rc, "scale");
    if (scales.empty()) scales.push_back("");
    std::vector<std::string> suffixes{""};
    for (const auto& task : choices(rc, "task")) {
      if (!task_suffix(task).empty()) suffixes.push_back(task_suffix(task));
    }
    for (const auto& suffix : suffixes) {
      for (const auto& scale : scales) known += (known.empty() ? "" : ", ") + n + scale + suffix;
    }
  }
  return known;
}

}  // namespace yoloflow::core
