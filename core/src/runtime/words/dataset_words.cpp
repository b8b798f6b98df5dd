// Ultralytics' training words about what the dataset reader reads: single_cls= (every box as
// class 0), classes= (the boxes of some classes) and fraction= (part of the train split; the
// reader cuts only the train split, so validation reads all of it). Each goes to every reader
// of the pipeline that has the parameter, the train sink's own val_source included.
#include <algorithm>

#include "runtime/pipeline/component_spec.h"
#include "runtime/util/ascii_lower.h"
#include "runtime/words/training_word_groups.h"
#include "runtime/words/word_values.h"

namespace yoloflow::core {
namespace {

// The source stages that have parameter `param`, and the train sink's own val_source when it
// names one with it: a word about what the dataset reader reads goes to all of them.
std::vector<std::string> source_param_paths(const json& document, const Registry& registry, const std::string& sink,
                                            const std::string& param) {
  std::vector<std::string> paths;
  for (const auto& [name, rc] : known_stages(document, registry)) {
    if (rc->info.kind == Kind::Source && rc->info.schema.find(param) != nullptr) {
      paths.push_back("stages." + name + ".params." + param);
    }
  }
  const json& params = document["stages"][sink].value("params", json::object());
  if (params.contains("val_source") && params["val_source"].is_object()) {
    const json& vs = params["val_source"];
    const RegisteredComponent* rc = registry.find(Kind::Source, vs.value("plugin", std::string()));
    if (rc != nullptr && rc->info.schema.find(param) != nullptr) {
      paths.push_back("stages." + sink + ".params.val_source.params." + param);
    }
  }
  return paths;
}

// The value the word gives the readers' parameter; false after a diagnostic when it fits none.
bool read_fraction(const TrainingWord& w, json& value) {
  double x = 0;
  if (!number_word(w.key, w.text, x, w.out)) return false;
  if (!(x > 0 && x <= 1)) {
    w.out.push_back({w.key, "fraction=" + w.text + ": expected a share of the train split's images, above 0 and at most 1"});
    return false;
  }
  value = x;
  return true;
}

bool read_classes(const TrainingWord& w, json& value) {
  json v = parse_word_value(w.text);
  if (v.is_null() || (v.is_string() && ascii_lower(v.get<std::string>()) == "none")) v = json::array();
  if (!v.is_array()) v = json::array({v});
  if (!std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_number_integer() && e.get<long long>() >= 0; })) {
    w.out.push_back({w.key, "classes=" + w.text + ": expected class ids, e.g. classes=0 or classes=[0,2] (data.yaml's "
                                                  "names give each id)"});
    return false;
  }
  value = v;
  return true;
}

}  // namespace

bool expand_dataset_word(const TrainingWord& w) {
  if (w.key != "single_cls" && w.key != "classes" && w.key != "fraction") return false;
  json value;
  if (w.key == "single_cls") {
    bool b = false;
    if (!bool_word(w.key, w.text, b, w.out)) return true;
    value = b;
  } else if (w.key == "fraction") {
    if (!read_fraction(w, value)) return true;
  } else if (!read_classes(w, value)) {
    return true;
  }
  const auto paths = source_param_paths(w.document, w.registry, w.sink, w.key);
  if (paths.empty()) {
    w.out.push_back({w.key, w.key + "=: this pipeline's source has no `" + w.key + "` parameter"});
    return true;
  }
  for (const auto& path : paths) w.expanded.push_back(path + "=" + value.dump());
  return true;
}

}  // namespace yoloflow::core
