// The closest-name suggestion for an override path that names nothing (see override_suggestions.h).
#include "runtime/pipeline/override_suggestions.h"

#include "runtime/pipeline/component_spec.h"
#include "runtime/pipeline/document_lookup.h"

namespace yoloflow::core {
namespace {

// Every name a word at the top level may be besides a setting: a stage's parameter name (a
// shortcut), a parameter of a component a stage names, and the shortcut words that are no
// parameter's name (runtime/words/shortcut_words.cpp).
void add_top_level_names(const json& document, const Registry& registry, std::vector<std::string>& candidates) {
  for (const auto& [name, rc] : known_stages(document, registry)) {
    for (const auto& n : rc->info.schema.names()) candidates.push_back(n);
    for (const auto& nested : nested_components(document["stages"][name], *rc, registry)) {
      for (const auto& n : nested.second->info.schema.names()) candidates.push_back(n);
    }
  }
  for (const char* n : {"data", "model", "lr0", "momentum", "weight_decay"}) candidates.emplace_back(n);
}

}  // namespace

std::string unknown_part_message(const json& document, const Registry& registry, const std::vector<std::string>& segs,
                                 std::size_t i, const std::string& prefix, const json& here_object,
                                 const std::vector<std::string>& known, const std::string& what) {
  const std::string& seg = segs[i];
  const bool last = i + 1 == segs.size();
  const std::string here = prefix.empty() ? seg : prefix + "." + seg;
  std::vector<std::string> candidates = known;
  for (auto it = here_object.begin(); it != here_object.end(); ++it) candidates.push_back(it.key());
  if (i == 0) add_top_level_names(document, registry, candidates);
  std::string msg = "cannot override: '" + here + "' is not " +
                    (what.empty() ? std::string("a key of this pipeline") : what);
  std::string rest;  // the parts after this one, dotted
  for (std::size_t j = i + 1; j < segs.size(); ++j) rest += (rest.empty() ? "" : ".") + segs[j];
  const auto guess = closest_name(seg, candidates);
  const bool stage_named = i == 0 && !last && document.contains("stages") && document["stages"].is_object() &&
                           document["stages"].contains(seg);
  const auto owners = guess == seg && !last ? param_owners(document, registry, seg)
                                            : std::vector<std::pair<std::string, const ParamSpec*>>{};
  if (stage_named) {
    // source.split=val: a stage's parameters are under stages.<stage>.params.
    msg += "; did you mean 'stages." + seg + ".params." + rest + "'?";
  } else if (!owners.empty()) {
    // model.nc=2: a stage's parameter by its short name; say where it lives.
    const auto& [stage, spec] = owners.front();
    msg += "; did you mean 'stages." + stage + ".params." + seg +
           (spec->type == ParamType::Component ? ".params." : ".") + rest + "'?";
  } else if (guess == seg && !last) {
    msg += "; '" + seg + "' is a shortcut that takes a value (" + seg + "=...), not a path";
  } else if (!guess.empty()) {
    msg += "; did you mean '" + (prefix.empty() ? guess : prefix + "." + guess) + "'?";
  }
  return msg;
}

}  // namespace yoloflow::core
