// Ultralytics-style words as the pipeline paths they stand for (see shortcut_words.h).
#include "runtime/words/shortcut_words.h"

#include <algorithm>
#include <filesystem>

#include "runtime/pipeline/component_spec.h"
#include "runtime/pipeline/device_word.h"
#include "runtime/pipeline/document_lookup.h"
#include "runtime/pipeline/pipeline.h"
#include "runtime/words/task_words.h"
#include "runtime/words/training_words.h"
#include "runtime/words/ultralytics_arguments.h"
#include "runtime/words/word_values.h"
#include "yoloflow/log.h"

namespace yoloflow::core {
namespace {

// The name of a component's dataset parameter (ParamRole::Dataset); "" when it reads none.
std::string dataset_param(const RegisteredComponent* rc) {
  const ParamSpec* spec = rc->info.schema.find_role(ParamRole::Dataset);
  return spec ? spec->name : std::string();
}

// imgsz=[h, w] on a pipeline that trains: Ultralytics trains square, so a list becomes its
// largest side, with a warning. False when `text` is no list of sizes.
bool square_training_imgsz(const std::string& text, std::vector<std::string>& expanded) {
  const json v = parse_word_value(text);
  if (!v.is_array() || v.empty() || !std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_number_integer(); })) {
    return false;
  }
  const auto side = std::max_element(v.begin(), v.end(), [](const json& a, const json& b) {
                      return a.get<long long>() < b.get<long long>();
                    })->get<long long>();
  YF_LOG_WARN("imgsz=" << text << ": training is square, as in Ultralytics; using imgsz=" << side);
  expanded = {"imgsz=" + std::to_string(side)};
  return true;
}

// Ultralytics' device=0 is a CUDA index and -1 an idle GPU (here: CUDA when there is one, else
// the CPU, as "auto"); `cpu`, `cuda`, `cuda:N` pass as they are. Several devices are several
// processes.
std::vector<std::string> device_overrides(const std::string& text, Diagnostics& out) {
  const json v = parse_word_value(text);
  if (v.is_array()) {
    out.push_back({"device", "device=" + text + ": one device per process (cpu, 0, cuda:1, -1); several GPUs train "
                                                "through torchrun, one process each (docs/distributed.md)"});
    return {""};
  }
  std::string device;
  if (!read_device_word(text, device)) {
    out.push_back({"device", device_refusal("device=", text)});
    return {""};
  }
  return {"device=" + device};
}

// The pipeline's one dataset, and any stage that names its own: the word means this data.
// A relative path that exists from here is meant from here, as Ultralytics reads data=.
std::vector<std::string> data_overrides(const std::string& text, const json& document, const Registry& registry) {
  const std::string value = !text.empty() && std::filesystem::path(text).is_relative() && std::filesystem::exists(text)
                                ? std::filesystem::absolute(text).lexically_normal().string()
                                : text;
  std::vector<std::string> expanded{"data=" + value};
  for (const auto& [name, rc] : known_stages(document, registry)) {
    const json& stage = document["stages"][name];
    const std::string key = dataset_param(rc);
    if (!key.empty() && stage.contains("params") && stage["params"].is_object() && stage["params"].contains(key)) {
      expanded.push_back("stages." + name + ".params." + key + "=" + value);
    }
    // Components inside the stage that read a dataset of their own (the train sink's
    // val_source, which a run folder's pipeline.json always spells out): the same data.
    for (const auto& [path, c] : nested_components(stage, *rc, registry)) {
      const json spec = json_at(stage, "params." + path);
      const std::string nested_key = dataset_param(c);
      if (!nested_key.empty() && spec.is_object() && spec.contains("params") && spec["params"].is_object() &&
          spec["params"].contains(nested_key)) {
        expanded.push_back("stages." + name + ".params." + path + ".params." + nested_key + "=" + value);
      }
    }
  }
  return expanded;
}

// `key=text` where `key` is the parameter of that name of the one stage that has it, else of a
// component the sink names (patience=: its early_stopping callback's, lrf=: its scheduler's).
// Empty when no stage has it and it is no Ultralytics argument.
std::vector<std::string> parameter_overrides(const std::string& key, const std::string& text, const json& document,
                                             const std::string& sink, const RegisteredComponent* sink_rc,
                                             const Registry& registry, Diagnostics& out) {
  const auto owners = param_owners(document, registry, key);
  if (owners.size() == 1) {
    const std::string path = "stages." + owners[0].first + ".params." + key;
    // A component parameter given a plain name (precision=amp_bf16, scheduler=cosine): that
    // plugin; where the pipeline spells the component out, its parameters the new one takes too.
    const json v = parse_word_value(text);
    if (owners[0].second->type == ParamType::Component && v.is_string()) {
      const json& stage = document["stages"][owners[0].first];
      const bool spelled_out = stage.contains("params") && stage["params"].is_object() &&
                               stage["params"].contains(key) && stage["params"][key].is_object();
      return {spelled_out ? path + ".plugin=" + text : path + "=" + json{{"plugin", v}}.dump()};
    }
    return {path + "=" + text};
  }
  if (owners.empty() && sink_rc) {
    const json& stage = document["stages"][sink];
    const std::string path = nested_param_path(stage, *sink_rc, key, registry);
    if (!path.empty()) {
      // A component the pipeline leaves to the sink's default (box=: the default loss's) is
      // written out first, so that the word changes only its parameter.
      const std::string component = path.substr(0, path.find('.'));
      std::vector<std::string> expanded;
      if (!stage.contains("params") || !stage["params"].is_object() || !stage["params"].contains(component)) {
        expanded.push_back("stages." + sink + ".params." + component + "=" +
                           sink_rc->info.schema.find(component)->default_json.dump());
      }
      expanded.push_back("stages." + sink + ".params." + path + "=" + text);
      return expanded;
    }
  }
  if (owners.size() > 1) {
    std::string list;
    for (const auto& o : owners) list += (list.empty() ? "stages." : ", stages.") + o.first + ".params." + key;
    out.push_back({key, "cannot override: '" + key + "' is a parameter of several stages; name one: " + list});
    return {""};
  }
  if (const UltralyticsArgument* a = find_ultralytics_argument(key)) {
    // An Ultralytics word this pipeline has no place for: say so, not "unknown setting".
    std::string line = "Ultralytics' `" + key + "` has no place in this pipeline: none of its stages has a `" + key +
                       "` parameter";
    if (a->verbs.empty()) line += "; yoloflow does not support it: " + a->reason;
    out.push_back({key, line});
    return {""};
  }
  return {};
}

}  // namespace

std::vector<std::string> expand_shortcut(const std::string& key, const std::string& text_in, json& document,
                                         const std::vector<std::string>& words, const Registry& registry,
                                         Diagnostics& out) {
  if (key.find('.') != std::string::npos) return {};
  // Ultralytics' training words that mean more than one parameter, or another value.
  const bool training = !training_sink(document, registry).empty();
  const std::string text = training ? training_word_value(key, text_in) : text_in;
  std::vector<std::string> expanded;
  if (training && key == "imgsz" && square_training_imgsz(text, expanded)) return expanded;
  if (training) {
    if (const std::string refusal = ultralytics_refusal(key, "train"); !refusal.empty()) {
      out.push_back({key, refusal});
      return {""};
    }
    if (expand_training_word(key, text, words, document, registry, expanded, out)) {
      if (expanded.empty()) expanded.push_back("");  // handled in place, or refused
      return expanded;
    }
  }
  if (key == "device") return device_overrides(text, out);
  if (key == "data") return data_overrides(text, document, registry);
  // A word the pipeline's own settings know is not a shortcut.
  const auto settings = pipeline_schema().names();
  if (std::find(settings.begin(), settings.end(), key) != settings.end()) return {};
  // The sink stage (its name and component), where model= and the optimizer's words go.
  std::string sink;
  const RegisteredComponent* sink_rc = nullptr;
  for (const auto& [name, rc] : known_stages(document, registry)) {
    if (rc->info.kind == Kind::Sink) {
      sink = name;
      sink_rc = rc;
      break;
    }
  }
  if (expand_model_word(key, text, document, sink, sink_rc, words, registry, expanded, out)) return expanded;
  if (key == "lr0" || key == "momentum" || key == "weight_decay") {  // the optimizer's, inside the sink
    if (sink_rc && has_param(sink_rc, "optimizer")) {
      return {"stages." + sink + ".params.optimizer.params." + key + "=" + text};
    }
  }
  return parameter_overrides(key, text, document, sink, sink_rc, registry, out);
}

}  // namespace yoloflow::core
