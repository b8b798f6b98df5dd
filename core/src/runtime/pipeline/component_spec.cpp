#include "runtime/pipeline/component_spec.h"

#include <filesystem>

namespace yoloflow::core {
namespace {

const Kind kGraphKinds[] = {Kind::Source, Kind::Augmentation, Kind::Batcher, Kind::Sink};

std::vector<std::string> graph_kind_names(const Registry& registry) {
  std::vector<std::string> out;
  for (Kind k : kGraphKinds) {
    for (auto& n : registry.names(k)) out.push_back(n);
  }
  return out;
}

std::string did_you_mean(const std::string& name, const std::vector<std::string>& candidates) {
  const auto guess = closest_name(name, candidates);
  return guess.empty() ? std::string() : "; did you mean '" + guess + "'?";
}

}  // namespace

std::string component_label(Kind kind, const std::string& plugin) {
  return std::string(kind_name(kind)) + " '" + plugin + "'";
}

bool is_graph_kind(Kind kind) {
  for (Kind k : kGraphKinds) {
    if (k == kind) return true;
  }
  return false;
}

// "a source", "an augmentation".
static std::string a_kind(Kind kind) {
  const std::string name = kind_name(kind);
  return (std::string("aeiou").find(name.front()) == std::string::npos ? "a " : "an ") + name;
}

const RegisteredComponent* find_component_of_kind(const Registry& registry, Kind kind,
                                                  const std::string& plugin,
                                                  const std::string& path, Diagnostics& out) {
  if (const auto* rc = registry.find(kind, plugin)) return rc;
  if (const auto* other = registry.find_any_kind(plugin)) {
    out.push_back({path, "'" + plugin + "' is " + a_kind(other->info.kind) + " plugin, not " + a_kind(kind) + " plugin"});
    return nullptr;
  }
  std::string msg = "unknown " + std::string(kind_name(kind)) + " plugin '" + plugin + "'";
  const auto hint = did_you_mean(plugin, registry.names(kind));
  msg += hint.empty() ? " (`yoloflow plugins` lists the loaded ones)" : hint;
  out.push_back({path, msg});
  return nullptr;
}

const RegisteredComponent* find_stage_component(const Registry& registry, const std::string& plugin,
                                                const std::string& kind_text,
                                                const std::string& path, Diagnostics& out) {
  if (!kind_text.empty()) {
    Kind kind;
    if (!kind_from_name(kind_text, kind) || !is_graph_kind(kind)) {
      out.push_back({path + ".kind", "'" + kind_text +
                                         "' is not a stage kind: expected source, augmentation, "
                                         "batcher or sink" +
                                         did_you_mean(kind_text, {"source", "augmentation",
                                                                  "batcher", "sink"})});
      return nullptr;
    }
    return find_component_of_kind(registry, kind, plugin, path + ".plugin", out);
  }
  std::vector<const RegisteredComponent*> found;
  for (Kind k : kGraphKinds) {
    if (const auto* rc = registry.find(k, plugin)) found.push_back(rc);
  }
  if (found.size() == 1) return found[0];
  if (found.size() > 1) {
    std::string kinds;
    for (std::size_t i = 0; i < found.size(); ++i) {
      kinds += (i ? " and " : "") + std::string(kind_name(found[i]->info.kind));
    }
    out.push_back({path + ".plugin", "'" + plugin + "' names both a " + kinds +
                                         " plugin: add \"kind\" to say which"});
    return nullptr;
  }
  if (const auto* other = registry.find_any_kind(plugin)) {
    out.push_back({path + ".plugin", "'" + plugin + "' is " + a_kind(other->info.kind) +
                                         " plugin, which cannot be a stage (stages are sources, "
                                         "augmentations, batchers and sinks)"});
    return nullptr;
  }
  std::string msg = "unknown plugin '" + plugin + "'";
  const auto hint = did_you_mean(plugin, graph_kind_names(registry));
  msg += hint.empty() ? " (`yoloflow plugins` lists the loaded ones)" : hint;
  out.push_back({path + ".plugin", msg});
  return nullptr;
}

void RegistryComponentValidator::validate_component(const json& spec, const std::string& kind_text,
                                                    const std::string& path,
                                                    Diagnostics& out) const {
  Kind kind;
  if (!kind_from_name(kind_text, kind)) {
    out.push_back({path, "the parameter's schema names an unknown component kind '" + kind_text +
                             "' (a bug in the plugin that declares it)"});
    return;
  }
  for (auto it = spec.begin(); it != spec.end(); ++it) {
    const auto& key = it.key();
    if (!key.empty() && key[0] == '_') continue;
    if (key != "plugin" && key != "params") {
      out.push_back({path + "." + key, "unknown key '" + key +
                                           "' of a component: expected \"plugin\" and \"params\"" +
                                           did_you_mean(key, {"plugin", "params"})});
    }
  }
  auto pit = spec.find("plugin");
  if (pit == spec.end() || !pit->is_string()) {
    out.push_back({path + ".plugin", std::string(pit == spec.end() ? "is required" : "must be a string") +
                                         ": the name of a " + kind_text + " plugin"});
    return;
  }
  const std::string plugin = pit->get<std::string>();
  const auto* rc = find_component_of_kind(registry_, kind, plugin, path + ".plugin", out);
  if (!rc) return;
  json params = json::object();
  auto params_it = spec.find("params");
  if (params_it != spec.end()) {
    if (!params_it->is_object()) {
      out.push_back({path + ".params", "must be an object of parameters"});
      return;
    }
    params = *params_it;
  }
  rc->info.schema.validate(params, path + ".params", out, this, component_label(kind, plugin));
  validate_defaults(rc->info.schema, params, path + ".params", out);
}

void RegistryComponentValidator::validate_defaults(const Schema& schema, const json& params, const std::string& path,
                                                   Diagnostics& out) const {
  // A default is JSON the plugin wrote, not the pipeline: a component whose default names a
  // component of its own kind would otherwise recurse without end.
  constexpr int kMaxDepth = 8;
  if (default_depth_ >= kMaxDepth) return;
  struct Depth {
    int& d;
    explicit Depth(int& x) : d(++x) {}
    ~Depth() { --d; }
  } depth(default_depth_);
  for (const auto& spec : schema.params()) {
    if (spec.type != ParamType::Component && spec.type != ParamType::ComponentList) continue;
    const bool given = params.is_object() && params.contains(spec.name) && !params[spec.name].is_null();
    if (given || spec.default_json.is_null()) continue;
    const std::string param_path = path + "." + spec.name;
    const std::size_t before = out.size();
    if (spec.type == ParamType::Component && spec.default_json.is_object()) {
      validate_component(spec.default_json, spec.kind, param_path, out);
    } else if (spec.type == ParamType::ComponentList && spec.default_json.is_array()) {
      for (std::size_t i = 0; i < spec.default_json.size(); ++i) {
        if (spec.default_json[i].is_object()) {
          validate_component(spec.default_json[i], spec.kind, param_path + "." + std::to_string(i), out);
        }
      }
    }
    for (std::size_t i = before; i < out.size(); ++i) {
      out[i].message += " (in the default of " + param_path + ", which the pipeline leaves out)";
    }
  }
}

namespace {
// A component spec's params with their defaults filled in, in place.
void resolve_component(const std::string& kind_text, json& spec, const std::string& base_dir,
                       const Registry& registry) {
  Kind kind;
  const auto pit = spec.find("plugin");
  if (kind_from_name(kind_text, kind) && pit != spec.end() && pit->is_string()) {
    if (const auto* rc = registry.find(kind, pit->get<std::string>())) {
      const json nested = spec.contains("params") ? spec["params"] : json::object();
      spec["params"] = resolve_params(rc->info.schema, nested, base_dir, registry);
    }
  }
}
}  // namespace

json resolve_params(const Schema& schema, const json& params, const std::string& base_dir,
                    const Registry& registry) {
  json out = json::object();
  for (const auto& spec : schema.params()) {
    auto it = params.is_object() ? params.find(spec.name) : params.end();
    const bool given = params.is_object() && it != params.end() && !it->is_null();
    json v = given ? *it : spec.default_json;
    if (given && spec.type == ParamType::Path && v.is_string()) {
      std::filesystem::path p(v.get<std::string>());
      if (p.is_relative() && !base_dir.empty()) {
        v = (std::filesystem::path(base_dir) / p).lexically_normal().string();
      }
    }
    // Defaults are relative to wherever they are used; only written values are ours.
    if (spec.type == ParamType::Component && v.is_object()) {
      resolve_component(spec.kind, v, given ? base_dir : "", registry);
    }
    if (spec.type == ParamType::ComponentList && v.is_array()) {
      for (auto& item : v) {
        if (item.is_object()) resolve_component(spec.kind, item, given ? base_dir : "", registry);
      }
    }
    out[spec.name] = v;
  }
  // Comments ("_doc") are kept so the resolved pipeline still reads like the original.
  if (params.is_object()) {
    for (auto it = params.begin(); it != params.end(); ++it) {
      if (!it.key().empty() && it.key()[0] == '_') out[it.key()] = *it;
    }
  }
  return out;
}

const RegisteredComponent* stage_component(const json& stage, const Registry& registry) {
  if (!stage.is_object()) return nullptr;
  auto pit = stage.find("plugin");
  if (pit == stage.end() || !pit->is_string()) return nullptr;
  const std::string plugin = pit->get<std::string>();
  auto kit = stage.find("kind");
  Kind kind;
  if (kit != stage.end() && kit->is_string() && kind_from_name(kit->get<std::string>(), kind)) {
    return registry.find(kind, plugin);
  }
  for (Kind k : kGraphKinds) {
    if (const auto* rc = registry.find(k, plugin)) return rc;
  }
  return nullptr;
}

std::vector<std::pair<std::string, const RegisteredComponent*>> known_stages(const json& document,
                                                                             const Registry& registry) {
  std::vector<std::pair<std::string, const RegisteredComponent*>> out;
  if (!document.is_object() || !document.contains("stages") || !document["stages"].is_object()) return out;
  for (const auto& [name, stage] : document["stages"].items()) {
    if (const auto* rc = stage_component(stage, registry)) out.emplace_back(name, rc);
  }
  return out;
}

}  // namespace yoloflow::core
