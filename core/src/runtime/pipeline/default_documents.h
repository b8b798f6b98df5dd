#pragma once
// The pipeline documents the host falls back on where a pipeline, a checkpoint or a command
// names no component (core/resources/train-defaults.json and predict-defaults.json, built in):
// the host names no plugin in its code, so what it uses without being told is written there,
// where `yoloflow describe` and the docs can show it and a user can read it as a pipeline.
#include <string>
#include <utility>

#include "yoloflow/params.h"

namespace yoloflow::core {

struct DefaultDocument {
  std::string file;  // as shipped, for messages: "core/resources/train-defaults.json"
  json document;
};

const DefaultDocument& train_defaults();
const DefaultDocument& predict_defaults();

// The stage of `document` whose plugin is the sink `sink` ("train", "predict"): its name and
// its object; ("", null) when there is none.
std::pair<std::string, json> sink_stage(const json& document, const std::string& sink);

// Parameter `name` of the train sink in train_defaults(); null when the file gives none.
json train_sink_default(const std::string& name);

}  // namespace yoloflow::core
