// Parameters found in a pipeline document before validation (see document_lookup.h).
#include "runtime/pipeline/document_lookup.h"

#include <algorithm>
#include <cctype>

#include "runtime/pipeline/component_spec.h"
#include "runtime/pipeline/override_path.h"

namespace yoloflow::core {

bool has_param(const RegisteredComponent* rc, const std::string& param) { return rc->info.schema.find(param) != nullptr; }

json json_at(const json& root, const std::string& dotted) {
  const json* cur = &root;
  for (const auto& seg : split_path(dotted)) {
    if (cur->is_object() && cur->contains(seg)) {
      cur = &(*cur)[seg];
    } else if (cur->is_array() && !seg.empty() && std::all_of(seg.begin(), seg.end(), ::isdigit) &&
               std::stoul(seg) < cur->size()) {
      cur = &(*cur)[std::stoul(seg)];
    } else {
      return json();
    }
  }
  return *cur;
}

std::vector<std::pair<std::string, const RegisteredComponent*>> nested_components(const json& stage,
                                                                                  const RegisteredComponent& rc,
                                                                                  const Registry& registry) {
  std::vector<std::pair<std::string, const RegisteredComponent*>> out;
  static const json kNoParams = json::object();
  const json& params = stage.contains("params") && stage["params"].is_object() ? stage["params"] : kNoParams;
  auto add = [&](const std::string& path, const json& spec, const std::string& kind_text) {
    Kind kind;
    if (!spec.is_object() || !spec.contains("plugin") || !spec["plugin"].is_string() || !kind_from_name(kind_text, kind)) {
      return;
    }
    if (const auto* c = registry.find(kind, spec["plugin"].get<std::string>())) out.emplace_back(path, c);
  };
  for (const auto& spec : rc.info.schema.params()) {
    const json& v = params.contains(spec.name) ? params[spec.name] : spec.default_json;
    if (spec.type == ParamType::Component) add(spec.name, v, spec.kind);
    if (spec.type == ParamType::ComponentList && v.is_array()) {
      for (std::size_t i = 0; i < v.size(); ++i) add(spec.name + "." + std::to_string(i), v[i], spec.kind);
    }
  }
  return out;
}

std::string nested_param_path(const json& stage, const RegisteredComponent& rc, const std::string& key,
                              const Registry& registry) {
  for (const auto& [path, c] : nested_components(stage, rc, registry)) {
    if (has_param(c, key)) return path + ".params." + key;
  }
  return "";
}

std::vector<std::pair<std::string, const ParamSpec*>> param_owners(const json& document, const Registry& registry,
                                                                   const std::string& key) {
  std::vector<std::pair<std::string, const ParamSpec*>> owners;
  for (const auto& [name, rc] : known_stages(document, registry)) {
    if (const ParamSpec* spec = rc->info.schema.find(key)) owners.emplace_back(name, spec);
  }
  return owners;
}

}  // namespace yoloflow::core
