#include "runtime/pipeline/default_documents.h"

#include "pipeline/default_documents_text.h"
#include "runtime/pipeline/json_text.h"
#include "yoloflow/error.h"

namespace yoloflow::core {
namespace {

DefaultDocument parse_default(const char* file, const char* text) {
  DefaultDocument d;
  d.file = file;
  // Built from a file of this repository at build time: only a broken build fails here. Read
  // as every JSON text is, so that the shipped files keep to what users' files must.
  d.document = read_json_text(text, std::string(file) + " (built in)");
  return d;
}

}  // namespace

const DefaultDocument& train_defaults() {
  static const DefaultDocument d = parse_default("core/resources/train-defaults.json", generated::train_defaults_text());
  return d;
}

const DefaultDocument& predict_defaults() {
  static const DefaultDocument d =
      parse_default("core/resources/predict-defaults.json", generated::predict_defaults_text());
  return d;
}

std::pair<std::string, json> sink_stage(const json& document, const std::string& sink) {
  if (!document.is_object() || !document.contains("stages") || !document["stages"].is_object()) return {"", json()};
  for (const auto& [name, stage] : document["stages"].items()) {
    if (stage.is_object() && stage.value("plugin", std::string()) == sink) return {name, stage};
  }
  return {"", json()};
}

json train_sink_default(const std::string& name) {
  const json stage = sink_stage(train_defaults().document, "train").second;
  if (!stage.is_object() || !stage.contains("params") || !stage["params"].is_object()) return json();
  return stage["params"].value(name, json());
}

}  // namespace yoloflow::core
