// Ultralytics' training words handed to their group, and the readers the groups share
// (see training_words.h and training_word_groups.h).
#include "runtime/words/training_words.h"

#include <algorithm>
#include <cmath>

#include "runtime/pipeline/component_spec.h"
#include "runtime/pipeline/json_text.h"
#include "runtime/util/ascii_lower.h"
#include "runtime/words/training_word_groups.h"
#include "runtime/words/word_values.h"

namespace yoloflow::core {

std::string word_text(const std::vector<std::string>& words, const std::string& key) {
  std::string found;
  for (const auto& w : words) {
    if (w.rfind(key + "=", 0) == 0) found = w.substr(key.size() + 1);
  }
  return found;
}

bool has_word(const std::vector<std::string>& words, const std::string& key) {
  return std::any_of(words.begin(), words.end(), [&](const std::string& w) { return w.rfind(key + "=", 0) == 0; });
}

std::string stage_of(const json& document, const Registry& registry, std::initializer_list<const char*> plugins) {
  const auto stages = known_stages(document, registry);
  for (const char* p : plugins) {
    for (const auto& [name, rc] : stages) {
      if (rc->info.name == p) return name;
    }
  }
  return "";
}

bool bool_word(const std::string& key, const std::string& text, bool& value, Diagnostics& out) {
  if (parse_word_bool(text, value)) return true;
  out.push_back({key, key + "=" + text + ": expected True or False"});
  return false;
}

bool number_word(const std::string& key, const std::string& text, double& value, Diagnostics& out) {
  const json v = parse_word_value(text);
  if (v.is_number() && !std::isfinite(v.get<double>())) {
    out.push_back({key, key + "=" + text + ": " + text + " " + kNonFiniteNumber});
    return false;
  }
  if (v.is_number()) {
    value = v.get<double>();
    return true;
  }
  out.push_back({key, key + "=" + text + ": expected a number"});
  return false;
}

std::string training_sink(const json& document, const Registry& registry) {
  for (const auto& [name, rc] : known_stages(document, registry)) {
    if (rc->info.kind == Kind::Sink && rc->info.schema.find("optimizer") != nullptr) return name;
  }
  return "";
}

std::string training_word_value(const std::string& key, const std::string& text) {
  const json v = parse_word_value(text);
  if (key == "cache") {
    if (v.is_boolean()) return v.get<bool>() ? "ram" : "\"none\"";
    if (v.is_string() && ascii_lower(v.get<std::string>()) == "ram") return "ram";
    if (v.is_string() && ascii_lower(v.get<std::string>()) == "disk") return "disk";
  }
  if (key == "batch" && v.is_number() && v.get<double>() == -1) return "\"auto\"";  // Ultralytics' AutoBatch
  if (key == "save_period" && v.is_number_integer() && v.get<long long>() < 0) return "0";  // -1: off
  return text;
}

bool expand_training_word(const std::string& key, const std::string& text, const std::vector<std::string>& words,
                          json& document, const Registry& registry, std::vector<std::string>& expanded,
                          Diagnostics& out) {
  const std::string sink = training_sink(document, registry);
  if (sink.empty()) return false;
  expanded.clear();
  const TrainingWord w{key, text, words, document, registry, sink, "stages." + sink + ".params.", expanded, out};
  // Each word belongs to one group; the first that knows it expands it.
  return expand_run_word(w) || expand_optimizer_word(w) || expand_dataset_word(w) || expand_augmentation_word(w);
}

std::string optimizer_auto_warning(const json& document, const std::vector<std::string>& words,
                                   const Registry& registry) {
  const std::string sink = training_sink(document, registry);
  if (sink.empty()) return "";
  std::vector<std::string> set;
  for (const char* k : {"lr0", "momentum"}) {
    if (has_word(words, k)) set.push_back(k);
  }
  if (set.empty()) return "";
  const json& params = document["stages"][sink].value("params", json::object());
  const json optimizer = params.contains("optimizer") ? params["optimizer"] : json();
  const RegisteredComponent* rc = registry.find(Kind::Sink, document["stages"][sink].value("plugin", std::string()));
  const std::string plugin =
      optimizer.is_object() ? optimizer.value("plugin", std::string())
      : rc && rc->info.schema.find("optimizer") ? rc->info.schema.find("optimizer")->default_json.value("plugin", std::string())
                                                : std::string();
  if (plugin != "auto") return "";
  std::string which = set[0] + (set.size() > 1 ? " and " + set[1] : "");
  return "optimizer=auto chooses its own learning rate and momentum, so " + which + " given here " +
         (set.size() > 1 ? "change" : "changes") + " nothing; name an optimizer to use " +
         (set.size() > 1 ? "them" : "it") + " (optimizer=SGD, AdamW, ...)";
}

}  // namespace yoloflow::core
