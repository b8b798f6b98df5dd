// model=, task= and the mask words as pipeline overrides (see task_words.h).
#include "runtime/words/task_words.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "runtime/pipeline/architecture_name.h"
#include "runtime/pipeline/component_spec.h"
#include "runtime/pipeline/document_lookup.h"
#include "runtime/pipeline/task_components.h"
#include "runtime/util/ascii_lower.h"
#include "runtime/util/string_affixes.h"

namespace yoloflow::core {
namespace {

// The batchers of the pipeline whose `param` a mask word sets: each batcher stage that has it,
// and the train sink's val_batcher when its plugin has it, as (override prefix, current value).
// A val_batcher the pipeline leaves to its default is written out first (`write_out`).
struct MaskBatcher {
  std::string prefix;     // "stages.batch.params." or "stages.train.params.val_batcher.params."
  json value;             // the parameter's value there now (null: its default)
  std::string write_out;  // an override writing the val_batcher out first, or ""
};

std::vector<MaskBatcher> mask_batchers(const json& document, const std::string& sink, const RegisteredComponent* sink_rc,
                                       const std::string& param, const Registry& registry) {
  std::vector<MaskBatcher> out;
  for (const auto& [name, rc] : known_stages(document, registry)) {
    if (rc->info.kind == Kind::Batcher && has_param(rc, param)) {
      out.push_back({"stages." + name + ".params.", json_at(document["stages"][name], "params." + param), ""});
    }
  }
  if (sink_rc == nullptr || !has_param(sink_rc, "val_batcher")) return out;
  const json& stage = document["stages"][sink];
  const bool given = stage.contains("params") && stage["params"].is_object() && stage["params"].contains("val_batcher");
  const json spec = given ? stage["params"]["val_batcher"] : sink_rc->info.schema.find("val_batcher")->default_json;
  if (!spec.is_object() || !spec.contains("plugin") || !spec["plugin"].is_string()) return out;
  const RegisteredComponent* batcher = registry.find(Kind::Batcher, spec["plugin"].get<std::string>());
  if (batcher == nullptr || !has_param(batcher, param)) return out;
  out.push_back({"stages." + sink + ".params.val_batcher.params.", json_at(spec, "params." + param),
                 given ? "" : "stages." + sink + ".params.val_batcher=" + spec.dump()});
  return out;
}

// What a model word naming `task` changes beside the model (core/resources/task-components.json):
// the train sink's loss and evaluator become the task's, unless the pipeline names a plugin of
// its own there; the batchers' `masks` become the task's. What the command line sets itself
// (`words`: stages.train.params.loss.plugin=..., stages.batch.params.masks=...) stays as given.
std::vector<std::string> task_overrides(const json& document, const std::string& sink, const RegisteredComponent* sink_rc,
                                        const std::string& task, const std::vector<std::string>& words,
                                        const Registry& registry) {
  const TaskComponents* t = task_components(task);
  std::vector<std::string> out;
  if (t == nullptr || sink_rc == nullptr) return out;
  auto given = [&](const std::string& path) {
    return std::any_of(words.begin(), words.end(), [&](const std::string& w) {
      return w.compare(0, path.size(), path) == 0 && (w.size() == path.size() || w[path.size()] == '.' || w[path.size()] == '=');
    });
  };
  // The component itself named on the command line (loss=... or loss.plugin=...); a word that
  // sets one of its parameters (loss.params.mask_backend=kernels) sets it on the task's.
  auto component_given = [&](const std::string& path) {
    return std::any_of(words.begin(), words.end(), [&](const std::string& w) {
      return w.rfind(path + "=", 0) == 0 || w.rfind(path + ".plugin=", 0) == 0;
    });
  };
  const json& stage = document["stages"][sink];
  const bool has_params = stage.contains("params") && stage["params"].is_object();
  for (const auto& [param, plugin] : {std::pair<std::string, std::string>{"loss", t->loss}, {"evaluator", t->evaluator}}) {
    if (plugin.empty() || !has_param(sink_rc, param) || component_given("stages." + sink + ".params." + param)) continue;
    const bool given = has_params && stage["params"].contains(param);
    const json spec = given ? stage["params"][param] : sink_rc->info.schema.find(param)->default_json;
    const std::string now = spec.is_object() ? spec.value("plugin", std::string()) : std::string();
    if (now == plugin || !(now.empty() || is_task_component(param, now))) continue;
    out.push_back("stages." + sink + ".params." + param +
                  (given && spec.is_object() ? ".plugin=" + plugin : "=" + json{{"plugin", plugin}}.dump()));
  }
  for (const auto& b : mask_batchers(document, sink, sink_rc, "masks", registry)) {
    if (b.value.is_boolean() ? b.value.get<bool>() == t->masks : !t->masks) continue;
    if (given(b.prefix + "masks")) continue;
    if (!b.write_out.empty()) out.push_back(b.write_out);
    out.push_back(b.prefix + "masks=" + (t->masks ? "true" : "false"));
  }
  return out;
}

// Whether the sink has a `model` parameter in the document, where model= and task= write.
bool sink_names_model(const json& document, const std::string& sink) {
  return !sink.empty() && document["stages"][sink].contains("params") &&
         document["stages"][sink]["params"].contains("model");
}

std::vector<std::string> model_overrides(const std::string& text, const json& document, const std::string& sink,
                                         const RegisteredComponent* sink_rc, const std::vector<std::string>& words,
                                         const Registry& registry) {
  // yolo11n-seg: the same plugin at task segment. A name no model reads stays the plugin's
  // name, which validation then refuses naming the known models.
  const auto name = parse_architecture(registry, text);
  std::vector<std::string> expanded{"stages." + sink + ".params.model.plugin=" + (name ? name->plugin : text)};
  if (name && !name->scale.empty()) expanded.push_back("stages." + sink + ".params.model.params.scale=" + name->scale);
  // Its multiples (a model yaml's scales row), or the scale's own in place of an earlier
  // model's: yolo11n after yolo11n[0.33,0.25,1024] is the stock yolo11n.
  if (name && name->has_multiples) {
    const nlohmann::json params = architecture_params(*name);
    for (const auto& [param, value] : params.items()) {
      if (param == "depth_multiple" || param == "width_multiple" || param == "max_channels") {
        expanded.push_back("stages." + sink + ".params.model.params." + param + "=" + value.dump());
      }
    }
  }
  if (name && !name->task.empty()) {
    expanded.push_back("stages." + sink + ".params.model.params.task=" + name->task);
    // ... and the task's loss, evaluator and mask targets (yolo11n-seg trains with masks).
    for (auto& o : task_overrides(document, sink, sink_rc, name->task, words, registry)) expanded.push_back(std::move(o));
  }
  return expanded;
}

std::vector<std::string> task_word_overrides(const std::string& text, const json& document, const std::string& sink,
                                             const RegisteredComponent* sink_rc, const std::vector<std::string>& words,
                                             const Registry& registry, Diagnostics& out) {
  // A model word of another task disagrees.
  const std::string task = ascii_lower(text);
  for (const auto& w : words) {
    if (w.rfind("model=", 0) != 0) continue;
    std::string value = w.substr(6);
    if (ends_with(value, ".yaml")) value = std::filesystem::path(value).stem().string();  // yolo11n-seg.yaml
    const auto named = parse_architecture(registry, value);
    if (named && !named->task.empty() && named->task != task) {
      out.push_back({"task", "task=" + text + ", but " + w + " is a " + named->task + " model: name the model of the task (" +
                                 named->plugin + named->scale + task_suffix(task) + ") or leave task= out"});
      return {""};
    }
  }
  std::vector<std::string> expanded{"stages." + sink + ".params.model.params.task=" + task};
  for (auto& o : task_overrides(document, sink, sink_rc, task, words, registry)) expanded.push_back(std::move(o));
  return expanded;
}

// Ultralytics' mask layout and size, for training and validation alike: every batcher that
// makes mask targets, the train sink's val_batcher included.
std::vector<std::string> mask_overrides(const std::string& key, const std::string& text, const json& document,
                                        const std::string& sink, const RegisteredComponent* sink_rc,
                                        const Registry& registry, Diagnostics& out) {
  const auto batchers = mask_batchers(document, sink, sink_rc, key, registry);
  if (batchers.empty()) {
    out.push_back({key, key + "=: no batcher of this pipeline makes mask targets (collate's `" + key +
                            "`, with masks=true: a segmentation pipeline, e.g. model=yolo11n-seg.yaml)"});
    return {""};
  }
  std::vector<std::string> expanded;
  for (const auto& b : batchers) {
    if (!b.write_out.empty()) expanded.push_back(b.write_out);
    expanded.push_back(b.prefix + key + "=" + text);
  }
  return expanded;
}

}  // namespace

bool expand_model_word(const std::string& key, const std::string& text, const json& document, const std::string& sink,
                       const RegisteredComponent* sink_rc, const std::vector<std::string>& words,
                       const Registry& registry, std::vector<std::string>& expanded, Diagnostics& out) {
  if (key == "model" || key == "task") {
    // yolo11s = plugin yolo11, scale s; other model parameters (channels_last...) stay. task=segment:
    // the model's task, with the task's loss, evaluator and masks, as a model word's suffix
    // says it (yolo11n-seg).
    if (!sink_names_model(document, sink)) {
      out.push_back({key, key + "=: this pipeline's sink has no `model` parameter"});
      expanded = {""};
    } else if (key == "model") {
      expanded = model_overrides(text, document, sink, sink_rc, words, registry);
    } else {
      expanded = task_word_overrides(text, document, sink, sink_rc, words, registry, out);
    }
    return true;
  }
  if (key == "overlap_mask" || key == "mask_ratio") {
    expanded = mask_overrides(key, text, document, sink, sink_rc, registry, out);
    return true;
  }
  return false;
}

}  // namespace yoloflow::core
