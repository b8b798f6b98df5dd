#include "runtime/sweep/same_runs.h"

#include <algorithm>
#include <map>

#include "runtime/pipeline/pipeline.h"
#include "runtime/words/pipeline_loading.h"
#include "runtime/words/training_words.h"

namespace yoloflow::core {
namespace {

// The pipeline as it trains: the words an `auto` optimizer ignores left out.
json effective(json document, const Registry& registry) {
  const std::string sink = training_sink(document, registry);
  if (sink.empty()) return document;
  json& optimizer = document["stages"][sink]["params"]["optimizer"];
  if (optimizer.is_object() && optimizer.value("plugin", std::string()) == "auto" && optimizer.contains("params") &&
      optimizer["params"].is_object()) {
    optimizer["params"].erase("lr0");
    optimizer["params"].erase("momentum");
  }
  return document;
}

// The overrides of `b` that `a` does not have, for the message.
std::string difference(const SweepRun& a, const SweepRun& b) {
  std::string out;
  for (const auto& o : b.overrides) {
    if (std::find(a.overrides.begin(), a.overrides.end(), o) == a.overrides.end()) out += (out.empty() ? "" : " ") + o;
  }
  return out;
}

}  // namespace

std::string same_runs(const SweepPlan& plan, const Registry& registry) {
  std::map<std::string, std::size_t> seen;  // effective pipeline text -> first run with it
  std::vector<std::string> raw;             // each run's resolved pipeline, as written
  std::string problems;
  for (std::size_t i = 0; i < plan.runs.size(); ++i) {
    const auto loaded = load_pipeline(plan.base, plan.runs[i].overrides, registry);
    raw.push_back(loaded.ok() ? loaded.pipeline->document.dump() : std::string());
    if (!loaded.ok()) continue;
    const std::string text = effective(loaded.pipeline->document, registry).dump();
    const auto [it, fresh] = seen.emplace(text, i);
    if (fresh) continue;
    const SweepRun& first = plan.runs[it->second];
    const SweepRun& again = plan.runs[i];
    const bool ignored = raw[it->second] != raw.back();  // equal only once lr0/momentum of `auto` are left out
    problems += "runs '" + first.name + "' and '" + again.name + "' train the same pipeline: " +
                difference(first, again) + " changes nothing in it" +
                (ignored ? " (optimizer `auto` chooses its own lr0 and momentum; name an optimizer, e.g. "
                           "optimizer=SGD, to sweep them)"
                         : "") +
                "\n";
  }
  return problems;
}

}  // namespace yoloflow::core
