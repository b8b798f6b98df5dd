// One path=value override walked into a pipeline document (see override_path.h).
#include "runtime/pipeline/override_path.h"

#include <algorithm>
#include <cctype>

#include "runtime/pipeline/component_spec.h"
#include "runtime/pipeline/override_suggestions.h"
#include "runtime/pipeline/pipeline.h"
#include "runtime/util/string_affixes.h"

namespace yoloflow::core {
namespace {

const std::vector<std::string> kStageKeys = {"plugin", "kind", "params", "input"};

// The component whose spec object is `owner` ({"plugin": ..., "kind"?: ...}).
const RegisteredComponent* owner_component(const json& owner, bool is_stage, bool is_monitor,
                                           const Registry& registry) {
  if (is_stage) return stage_component(owner, registry);
  if (!owner.is_object()) return nullptr;
  auto pit = owner.find("plugin");
  if (pit == owner.end() || !pit->is_string()) return nullptr;
  const std::string plugin = pit->get<std::string>();
  if (is_monitor) {
    return registry.find(Kind::Monitor, plugin);
  }
  auto kit = owner.find("kind");
  Kind kind;
  if (kit != owner.end() && kit->is_string() && kind_from_name(kit->get<std::string>(), kind)) {
    return registry.find(kind, plugin);
  }
  return registry.find_any_kind(plugin);
}

// `owner` ({"plugin": old, "params": {...}}) about to become plugin `value`: the parameters the
// new plugin does not take belonged to the old one and go with it (amp=False on a run whose
// precision was amp leaves fp32 without amp's growth_interval); those both take stay.
void drop_params_of_replaced_plugin(json& owner, const json& value, bool is_stage, bool is_monitor,
                                    const Registry& registry) {
  if (!value.is_string() || !owner.contains("params") || !owner["params"].is_object() || !owner.contains("plugin") ||
      owner["plugin"] == value) {
    return;
  }
  const RegisteredComponent* old_rc = owner_component(owner, is_stage, is_monitor, registry);
  if (old_rc == nullptr) return;
  const RegisteredComponent* new_rc = registry.find(old_rc->info.kind, value.get<std::string>());
  if (new_rc == nullptr) return;  // validation names the unknown plugin
  json& params = owner["params"];
  for (auto it = params.begin(); it != params.end();) {
    if (new_rc->info.schema.find(it.key()) == nullptr && old_rc->info.schema.find(it.key()) != nullptr) {
      it = params.erase(it);
    } else {
      ++it;
    }
  }
}

// What may be named at part `i` of `segs` besides the keys already present, and what such a
// name is there ("a pipeline setting", "a parameter of batcher 'x'"); `chain` holds the objects
// walked through to reach it, the object `cur` last.
struct NamesHere {
  std::vector<std::string> known;
  std::string what;
};

NamesHere names_at(const std::vector<std::string>& segs, std::size_t i, const std::vector<json*>& chain,
                   const json& cur, const Registry& registry) {
  NamesHere n;
  if (i == 0) {
    n.known = pipeline_schema().names();
    n.what = "a pipeline setting";
  } else if (i == 1 && segs[0] == "stages") {
    n.what = "a stage of this pipeline";
  } else if (i == 2 && segs[0] == "stages") {
    n.known = kStageKeys;
    n.what = "a key of a stage";
  } else if (segs[i - 1] == "params" && chain.size() >= 2) {
    const bool is_stage = i == 3 && segs[0] == "stages";
    const bool is_monitor = i == 3 && segs[0] == "monitors";
    if (const auto* rc = owner_component(*chain[chain.size() - 2], is_stage, is_monitor, registry)) {
      n.known = rc->info.schema.names();
      n.what = "a parameter of " + component_label(rc->info.kind, rc->info.name);
    } else {
      n.what = "a parameter of this pipeline";
    }
  } else if (cur.contains("plugin")) {
    n.known = {"plugin", "params"};
    n.what = "a key of a component";
  }
  return n;
}

}  // namespace

std::vector<std::string> split_path(const std::string& dotted) { return split_at(dotted, '.'); }

void apply_override(json& document, const std::string& path, const json& value, const Registry& registry,
                    Diagnostics& out) {
  const auto segs = split_path(path);
  if (!document.is_object()) {
    out.push_back({path, "cannot override: the pipeline is not a JSON object"});
    return;
  }
  // Walk down, remembering each object's parent to know which schema applies.
  std::vector<json*> chain = {&document};
  std::string prefix;
  for (std::size_t i = 0; i < segs.size(); ++i) {
    json& cur = *chain.back();
    const std::string& seg = segs[i];
    const bool last = i + 1 == segs.size();
    const std::string here = prefix.empty() ? seg : prefix + "." + seg;
    if (seg.empty()) {
      out.push_back({path, "cannot override: the path has an empty part"});
      return;
    }
    if (cur.is_array()) {
      const bool digits = std::all_of(seg.begin(), seg.end(), ::isdigit);
      const std::size_t idx = digits ? std::stoul(seg) : cur.size();
      if (idx >= cur.size()) {
        out.push_back({path, "cannot override: '" + prefix + "' is a list of " + std::to_string(cur.size()) +
                                " entries and '" + seg + "' is not one of its indices"});
        return;
      }
      if (last) {
        cur[idx] = value;
      } else {
        chain.push_back(&cur[idx]);
      }
      prefix = here;
      continue;
    }
    if (!cur.is_object()) {
      out.push_back(
          {path, "cannot override: '" + prefix + "' holds " + cur.dump() + ", not an object with '" + seg + "'"});
      return;
    }
    const NamesHere names = names_at(segs, i, chain, cur, registry);
    if (!cur.contains(seg) && std::find(names.known.begin(), names.known.end(), seg) == names.known.end()) {
      out.push_back({path, unknown_part_message(document, registry, segs, i, prefix, cur, names.known, names.what)});
      return;
    }
    if (last && seg == "plugin") {
      const bool is_stage = i == 2 && segs[0] == "stages", is_monitor = i == 2 && segs[0] == "monitors";
      drop_params_of_replaced_plugin(cur, value, is_stage, is_monitor, registry);
    }
    if (last) {
      cur[seg] = value;
    } else {
      if (!cur.contains(seg)) cur[seg] = json::object();
      chain.push_back(&cur[seg]);
    }
    prefix = here;
  }
}

}  // namespace yoloflow::core
