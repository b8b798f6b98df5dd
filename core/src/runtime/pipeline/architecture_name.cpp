#include "runtime/pipeline/architecture_name.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
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
  ArchitectureName name;
  if (registry.find(Kind::Model, stem)) {
    name.plugin = stem;
    return name;
  }
  if (stem.size() < 2) return std::nullopt;
  const std::string base = stem.substr(0, stem.size() - 1), letter = stem.substr(stem.size() - 1);
  const RegisteredComponent* rc = registry.find(Kind::Model, base);
  if (!rc || !lists(choices(*rc, "scale"), letter)) return std::nullopt;
  name.plugin = base;
  name.scale = letter;
  return name;
}

// `word` (without multiples) as a plugin, its scale and its task suffix.
std::optional<ArchitectureName> named_architecture(const Registry& registry, const std::string& word) {
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

}  // namespace

std::string task_suffix(const std::string& task) {
  for (const auto& [t, suffix] : kTaskSuffixes) {
    if (task == t) return suffix;
  }
  return "";
}

std::optional<ArchitectureName> parse_architecture(const Registry& registry, const std::string& text) {
  // A trailing [depth,width,max_channels]: three positive numbers, for a plugin that takes them.
  std::string word = text;
  std::vector<double> multiples;
  if (const auto open = text.find('['); open != std::string::npos && ends_with(text, "]")) {
    std::string inner = text.substr(open + 1, text.size() - open - 2);
    word = text.substr(0, open);
    std::size_t at = 0;
    while (at <= inner.size()) {
      const auto comma = std::min(inner.find(',', at), inner.size());
      const std::string part = inner.substr(at, comma - at);
      char* end = nullptr;
      const double v = std::strtod(part.c_str(), &end);
      if (part.empty() || end == nullptr || *end != '\0' || !(v > 0) || !std::isfinite(v)) return std::nullopt;
      multiples.push_back(v);
      at = comma + 1;
    }
    if (multiples.size() != 3 || multiples[2] != std::floor(multiples[2]) || multiples[2] > 1e9) return std::nullopt;
  }
  auto name = named_architecture(registry, word);
  if (!name) return std::nullopt;
  const ParamSpec* depth = registry.find(Kind::Model, name->plugin)->info.schema.find("depth_multiple");
  name->has_multiples = depth != nullptr;
  if (!multiples.empty() && (!name->has_multiples || name->scale.empty())) return std::nullopt;
  name->multiples = std::move(multiples);
  return name;
}

nlohmann::json architecture_params(const ArchitectureName& name) {
  nlohmann::json params = nlohmann::json::object();
  if (!name.scale.empty()) params["scale"] = name.scale;
  if (!name.task.empty()) params["task"] = name.task;
  if (name.has_multiples) {
    const bool given = name.multiples.size() == 3;
    params["depth_multiple"] = given ? name.multiples[0] : 0.0;
    params["width_multiple"] = given ? name.multiples[1] : 0.0;
    params["max_channels"] = given ? static_cast<std::int64_t>(name.multiples[2]) : 0;
  }
  return params;
}

std::string multiples_suffix(double depth, double width, std::int64_t max_channels) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "[%.10g,%.10g,%lld]", depth, width, static_cast<long long>(max_channels));
  return buf;
}

bool buildable_multiples(double depth, double width, double max_channels) {
  return depth > 0 && depth <= 4 && width > 0 && width <= 4 && max_channels >= 1 && max_channels <= 1e6 &&
         max_channels == std::floor(max_channels);
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
