#include "runtime/words/run_args_yaml.h"

#include <map>

#include "runtime/words/ultralytics_arguments.h"

namespace yoloflow::core {
namespace {

// A YAML scalar for a word's value or a pipeline value: None as null, booleans as YAML's,
// text quoted where YAML would read it otherwise.
std::string yaml_value(const std::string& v) {
  if (is_ultralytics_none(v)) return "null";
  if (v == "True" || v == "true") return "true";
  if (v == "False" || v == "false") return "false";
  if (v.empty()) return "''";
  const bool plain = v.find_first_of(":#{}&*!|>'\"%@`,") == std::string::npos && v.front() != '-' && v.front() != ' ' &&
                     v.back() != ' ';
  if (plain || (v.front() == '[' && v.back() == ']')) return v;
  std::string q = "'";
  for (char c : v) q += c == '\'' ? std::string("''") : std::string(1, c);
  return q + "'";
}

std::string json_value(const nlohmann::json& j) {
  if (j.is_string()) return yaml_value(j.get<std::string>());
  if (j.is_boolean()) return j.get<bool>() ? "true" : "false";
  if (j.is_null()) return "null";
  return j.dump();
}

}  // namespace

std::string run_args_yaml(const nlohmann::json& pipeline, const std::string& sink, const std::vector<std::string>& words,
                          const std::string& run_dir) {
  std::map<std::string, std::string> values;  // key -> YAML value
  for (const auto& w : words) {
    const auto eq = w.find('=');
    if (eq == std::string::npos || w.empty() || w[0] == '-') continue;
    const std::string key = w.substr(0, eq);
    if (find_ultralytics_argument(key) != nullptr && key != "cfg") values[key] = yaml_value(w.substr(eq + 1));
  }
  // What the resolved pipeline says, whatever words (or none) asked for it.
  const auto stages = pipeline.value("stages", nlohmann::json::object());
  const auto train = stages.contains(sink) ? stages[sink].value("params", nlohmann::json::object()) : nlohmann::json::object();
  if (train.contains("model") && train["model"].is_object()) {
    const auto& m = train["model"];
    const auto params = m.value("params", nlohmann::json::object());
    const std::string task = params.value("task", std::string("detect"));
    values["task"] = task;
    if (!values.count("model")) {
      values["model"] = m.value("plugin", std::string()) + params.value("scale", std::string()) +
                        (task == "segment" ? "-seg" : "") + ".yaml";
    }
  }
  values["mode"] = "train";
  for (const char* key : {"data", "epochs", "imgsz", "seed", "deterministic"}) {
    if (pipeline.contains(key)) values[key] = json_value(pipeline[key]);
  }
  if (stages.contains("batch") && stages["batch"].value("params", nlohmann::json::object()).contains("batch")) {
    values["batch"] = json_value(stages["batch"]["params"]["batch"]);
  }
  if (train.contains("device") && train["device"].is_string() && !train["device"].get<std::string>().empty()) {
    values["device"] = json_value(train["device"]);
  }
  std::string out = "# The run's arguments under Ultralytics' keys: yoloflow train cfg=args.yaml asks for the same run.\n";
  for (const auto& a : ultralytics_arguments()) {
    if (const auto it = values.find(a.key); it != values.end()) out += a.key + ": " + it->second + "\n";
  }
  out += "save_dir: " + yaml_value(run_dir) + "\n";
  return out;
}

}  // namespace yoloflow::core
