#include "pipeline/overrides.h"

#include <algorithm>

#include "pipeline/component_spec.h"
#include "pipeline/pipeline.h"

namespace yoloflow::core {
namespace {

const std::vector<std::string> kStageKeys = {"plugin", "kind", "params", "input", "inputs"};


// The component whose spec object is `owner` ({"plugin": ..., "kind"?: ...}).
const RegisteredComponent* owner_component(const json& owner, bool is_stage, bool is_monitor,
                                           const Registry& registry) {
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
  if (is_stage) {
    for (Kind k : {Kind::Source, Kind::Augmentation, Kind::Batcher, Kind::Sink}) {
      if (const auto* rc = registry.find(k, plugin)) return rc;
    }
    return nullptr;
  }
  return registry.find_any_kind(plugin);
}

json parse_value(const std::string& text) {
  try {
    return json::parse(text);
  } catch (const json::exception&) {
    return text;  // `name=coco` means the string "coco"
  }
}

}  // namespace

void apply_overrides(json& document, const std::vector<std::string>& overrides,
                     const Registry& registry, Diagnostics& out) {
  for (const auto& item : overrides) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      out.push_back({item, "an override looks like path=value, e.g. epochs=3 or "
                           "stages.letterbox.params.auto=true"});
      continue;
    }
    const std::string key = item.substr(0, eq);
    const json value = parse_value(item.substr(eq + 1));
    const auto segs = split_path(key);
    if (!document.is_object()) {
      out.push_back({key, "cannot override: the pipeline is not a JSON object"});
      continue;
    }
    // Walk down, remembering each object's parent to know which schema applies.
    std::vector<json*> chain = {&document};
    std::string prefix;
    bool failed = false;
    for (std::size_t i = 0; i < segs.size() && !failed; ++i) {
      json& cur = *chain.back();
      const std::string& seg = segs[i];
      const bool last = i + 1 == segs.size();
      const std::string here = prefix.empty() ? seg : prefix + "." + seg;
      if (seg.empty()) {
        out.push_back({key, "cannot override: the path has an empty part"});
        failed = true;
        break;
      }
      if (cur.is_array()) {
        const bool digits = std::all_of(seg.begin(), seg.end(), ::isdigit);
        const std::size_t idx = digits ? std::stoul(seg) : cur.size();
        if (idx >= cur.size()) {
          out.push_back({key, "cannot override: '" + prefix + "' is a list of " +
                                  std::to_string(cur.size()) + " entries and '" + seg +
                                  "' is not one of its indices"});
          failed = true;
          break;
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
        out.push_back({key, "cannot override: '" + prefix + "' holds " + cur.dump() +
                                ", not an object with '" + seg + "'"});
        failed = true;
        break;
      }
      // What may be named here besides the keys already present.
      std::vector<std::string> known;
      std::string what;
      if (i == 0) {
        known = pipeline_schema().names();
        what = "a pipeline setting";
      } else if (i == 1 && segs[0] == "stages") {
        what = "a stage of this pipeline";
      } else if (i == 2 && segs[0] == "stages") {
        known = kStageKeys;
        what = "a key of a stage";
      } else if (segs[i - 1] == "params" && chain.size() >= 2) {
        const bool is_stage = i == 3 && segs[0] == "stages";
        const bool is_monitor = i == 3 && segs[0] == "monitors";
        if (const auto* rc = owner_component(*chain[chain.size() - 2], is_stage, is_monitor, registry)) {
          known = rc->info.schema.names();
          what = "a parameter of " + component_label(rc->info.kind, rc->info.name);
        } else {
          what = "a parameter of this pipeline";
        }
      } else if (cur.contains("plugin")) {
        known = {"plugin", "params"};
        what = "a key of a component";
      }
      if (cur.contains(seg) || std::find(known.begin(), known.end(), seg) != known.end()) {
        if (last) {
          cur[seg] = value;
        } else {
          if (!cur.contains(seg)) cur[seg] = json::object();
          chain.push_back(&cur[seg]);
        }
        prefix = here;
        continue;
      }
      std::vector<std::string> candidates = known;
      for (auto it = cur.begin(); it != cur.end(); ++it) candidates.push_back(it.key());
      std::string msg = "cannot override: '" + here + "' is not " +
                        (what.empty() ? std::string("a key of this pipeline") : what);
      const auto guess = closest_name(seg, candidates);
      if (!guess.empty()) msg += "; did you mean '" + (prefix.empty() ? guess : prefix + "." + guess) + "'?";
      out.push_back({key, msg});
      failed = true;
    }
  }
}

std::vector<std::string> split_path(const std::string& dotted) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : dotted) {
    if (c == '.') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

}  // namespace yoloflow::core
