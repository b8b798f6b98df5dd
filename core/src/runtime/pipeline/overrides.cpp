#include "runtime/pipeline/overrides.h"

#include <algorithm>
#include <filesystem>

#include "runtime/pipeline/architecture_name.h"
#include "runtime/pipeline/component_spec.h"
#include "runtime/pipeline/device_word.h"
#include "runtime/pipeline/json_text.h"
#include "runtime/pipeline/pipeline.h"
#include "runtime/pipeline/task_components.h"
#include "runtime/pipeline/training_words.h"
#include "runtime/pipeline/ultralytics_arguments.h"
#include "runtime/pipeline/word_values.h"
#include "runtime/util/ascii_lower.h"
#include "runtime/util/string_affixes.h"
#include "yoloflow/log.h"

namespace yoloflow::core {
namespace {

const std::vector<std::string> kStageKeys = {"plugin", "kind", "params", "input"};


// The component whose spec object is `owner` ({"plugin": ..., "kind"?: ...}).
const RegisteredComponent* owner_component(const json& owner, bool is_stage, bool is_monitor,
                                           const Registry& registry) {
  if (is_stage) return stage_component(owner, registry);
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
  return registry.find_any_kind(plugin);
}

// JSON, or the value as Ultralytics users write it (True, 1e-3, [0,2]), or the string itself
// (`name=coco` means "coco").
json parse_value(const std::string& text) { return parse_word_value(text); }

// `owner` ({"plugin": old, "params": {...}}) about to become plugin `value`: the parameters the
// new plugin does not take belonged to the old one and go with it (amp=False on a run whose
// precision was amp leaves fp32 without amp's growth_interval); those both take stay.
void drop_params_of_replaced_plugin(json& owner, const json& value, bool is_stage, bool is_monitor,
                                    const Registry& registry) {
  if (!value.is_string() || !owner.contains("params") || !owner["params"].is_object() || !owner.contains("plugin") ||
      owner["plugin"] == value) {
    return;
  }
  const RegisteredComponent* old_rc = owner_component(owner, is_stage, is_monitor, registry);
  if (old_rc == nullptr) return;
  const RegisteredComponent* new_rc = registry.find(old_rc->info.kind, value.get<std::string>());
  if (new_rc == nullptr) return;  // validation names the unknown plugin
  json& params = owner["params"];
  for (auto it = params.begin(); it != params.end();) {
    if (new_rc->info.schema.find(it.key()) == nullptr && old_rc->info.schema.find(it.key()) != nullptr) {
      it = params.erase(it);
    } else {
      ++it;
    }
  }
}

bool has_param(const RegisteredComponent* rc, const std::string& param) { return rc->info.schema.find(param) != nullptr; }

// The name of a component's dataset parameter (ParamRole::Dataset); "" when it reads none.
std::string dataset_param(const RegisteredComponent* rc) {
  const ParamSpec* spec = rc->info.schema.find_role(ParamRole::Dataset);
  return spec ? spec->name : std::string();
}

// The value at a dotted path below `root` ("callbacks.0": a list's index), null when absent.
json json_at(const json& root, const std::string& dotted) {
  const json* cur = &root;
  for (const auto& seg : split_path(dotted)) {
    if (cur->is_object() && cur->contains(seg)) {
      cur = &(*cur)[seg];
    } else if (cur->is_array() && !seg.empty() && std::all_of(seg.begin(), seg.end(), ::isdigit) &&
               std::stoul(seg) < cur->size()) {
      cur = &(*cur)[std::stoul(seg)];
    } else {
      return json();
    }
  }
  return *cur;
}

// The components `stage` names in its Component and ComponentList parameters, each with its
// path below the stage's params ("scheduler", "callbacks.0"); a parameter the stage leaves out
// names its default's.
std::vector<std::pair<std::string, const RegisteredComponent*>> nested_components(const json& stage,
                                                                                  const RegisteredComponent& rc,
                                                                                  const Registry& registry) {
  std::vector<std::pair<std::string, const RegisteredComponent*>> out;
  static const json kNoParams = json::object();
  const json& params = stage.contains("params") && stage["params"].is_object() ? stage["params"] : kNoParams;
  auto add = [&](const std::string& path, const json& spec, const std::string& kind_text) {
    Kind kind;
    if (!spec.is_object() || !spec.contains("plugin") || !spec["plugin"].is_string() || !kind_from_name(kind_text, kind)) {
      return;
    }
    if (const auto* c = registry.find(kind, spec["plugin"].get<std::string>())) out.emplace_back(path, c);
  };
  for (const auto& spec : rc.info.schema.params()) {
    const json& v = params.contains(spec.name) ? params[spec.name] : spec.default_json;
    if (spec.type == ParamType::Component) add(spec.name, v, spec.kind);
    if (spec.type == ParamType::ComponentList && v.is_array()) {
      for (std::size_t i = 0; i < v.size(); ++i) add(spec.name + "." + std::to_string(i), v[i], spec.kind);
    }
  }
  return out;
}

// "scheduler.params.lrf" or "callbacks.0.params.patience": where `key` is a parameter of a
// component that `stage` names; "" when none is.
std::string nested_param_path(const json& stage, const RegisteredComponent& rc, const std::string& key,
                              const Registry& registry) {
  for (const auto& [path, c] : nested_components(stage, rc, registry)) {
    if (has_param(c, key)) return path + ".params." + key;
  }
  return "";
}

// The stages that have a parameter named `key`, with its spec, in the pipeline's order.
std::vector<std::pair<std::string, const ParamSpec*>> param_owners(const json& document, const Registry& registry,
                                                                   const std::string& key) {
  std::vector<std::pair<std::string, const ParamSpec*>> owners;
  for (const auto& [name, rc] : known_stages(document, registry)) {
    if (const ParamSpec* spec = rc->info.schema.find(key)) owners.emplace_back(name, spec);
  }
  return owners;
}

// The batchers of the pipeline whose `param` a mask word sets: each batcher stage that has it,
// and the train sink's val_batcher when its plugin has it, as (override prefix, current value).
// A val_batcher the pipeline leaves to its default is written out first (`write_out`).
struct MaskBatcher {
  std::string prefix;  // "stages.batch.params." or "stages.train.params.val_batcher.params."
  json value;          // the parameter's value there now (null: its default)
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

// Ultralytics-style `key=value` words (data=, model=, batch=, device=, patience=, lr0= ...) as
// the pipeline overrides they stand for (docs/pipeline-format.md, "Shortcuts"); empty when
// `key` is none. A word the pipeline's own settings know is not a shortcut.
std::vector<std::string> expand_shortcut(const std::string& key, const std::string& text_in, json& document,
                                         const std::vector<std::string>& words, const Registry& registry,
                                         Diagnostics& out) {
  if (key.find('.') != std::string::npos) return {};
  // Ultralytics' training words that mean more than one parameter, or another value.
  const bool training = !training_sink(document, registry).empty();
  const std::string text = training ? training_word_value(key, text_in) : text_in;
  if (training && key == "imgsz") {
    // Ultralytics trains square: a list becomes its largest side, with a warning.
    const json v = parse_word_value(text);
    if (v.is_array() && !v.empty() && std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_number_integer(); })) {
      const auto side = std::max_element(v.begin(), v.end(), [](const json& a, const json& b) {
                          return a.get<long long>() < b.get<long long>();
                        })->get<long long>();
      YF_LOG_WARN("imgsz=" << text << ": training is square, as in Ultralytics; using imgsz=" << side);
      return {"imgsz=" + std::to_string(side)};
    }
  }
  if (training) {
    if (const std::string refusal = ultralytics_refusal(key, "train"); !refusal.empty()) {
      out.push_back({key, refusal});
      return {""};
    }
    std::vector<std::string> expanded;
    if (expand_training_word(key, text, words, document, registry, expanded, out)) {
      if (expanded.empty()) expanded.push_back("");  // handled in place, or refused
      return expanded;
    }
  }
  const auto settings = pipeline_schema().names();
  const auto stages = known_stages(document, registry);
  // The sink stage (its name and component), where model= and the optimizer's words go.
  std::string sink;
  const RegisteredComponent* sink_rc = nullptr;
  for (const auto& [name, rc] : stages) {
    if (rc->info.kind == Kind::Sink) {
      sink = name;
      sink_rc = rc;
      break;
    }
  }
  if (key == "device") {
    // Ultralytics' device=0 is a CUDA index and -1 an idle GPU (here: CUDA when there is one, else
    // the CPU, as "auto"); `cpu`, `cuda`, `cuda:N` pass as they are. Several devices are
    // several processes.
    const json v = parse_word_value(text);
    if (v.is_array()) {
      out.push_back({key, "device=" + text + ": one device per process (cpu, 0, cuda:1, -1); several GPUs train "
                                             "through torchrun, one process each (docs/distributed.md)"});
      return {""};
    }
    std::string device;
    if (!read_device_word(text, device)) {
      out.push_back({key, device_refusal("device=", text)});
      return {""};
    }
    return {"device=" + device};
  }
  if (key == "data") {
    // The pipeline's one dataset, and any stage that names its own: the word means this data.
    // A relative path that exists from here is meant from here, as Ultralytics reads data=.
    const std::string value =
        !text.empty() && std::filesystem::path(text).is_relative() && std::filesystem::exists(text)
            ? std::filesystem::absolute(text).lexically_normal().string()
            : text;
    std::vector<std::string> expanded{"data=" + value};
    for (const auto& [name, rc] : stages) {
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
  if (std::find(settings.begin(), settings.end(), key) != settings.end()) return {};
  if (key == "model") {
    // yolo11s = plugin yolo11, scale s; other model parameters (channels_last...) stay.
    if (sink.empty() || !document["stages"][sink].contains("params") ||
        !document["stages"][sink]["params"].contains("model")) {
      out.push_back({key, "model=: this pipeline's sink has no `model` parameter"});
      return {""};
    }
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
  if (key == "task") {
    // task=segment: the model's task, with the task's loss, evaluator and masks, as a model
    // word's suffix says it (yolo11n-seg). A model word of another task disagrees.
    const std::string task = ascii_lower(text);
    if (sink.empty() || !document["stages"][sink].contains("params") ||
        !document["stages"][sink]["params"].contains("model")) {
      out.push_back({key, "task=: this pipeline's sink has no `model` parameter"});
      return {""};
    }
    for (const auto& w : words) {
      if (w.rfind("model=", 0) != 0) continue;
      std::string value = w.substr(6);
      if (ends_with(value, ".yaml")) value = std::filesystem::path(value).stem().string();  // yolo11n-seg.yaml
      const auto named = parse_architecture(registry, value);
      if (named && !named->task.empty() && named->task != task) {
        out.push_back({key, "task=" + text + ", but " + w + " is a " + named->task + " model: name the model of the task (" +
                                named->plugin + named->scale + task_suffix(task) + ") or leave task= out"});
        return {""};
      }
    }
    std::vector<std::string> expanded{"stages." + sink + ".params.model.params.task=" + task};
    for (auto& o : task_overrides(document, sink, sink_rc, task, words, registry)) expanded.push_back(std::move(o));
    return expanded;
  }
  if (key == "overlap_mask" || key == "mask_ratio") {
    // Ultralytics' mask layout and size, for training and validation alike: every batcher that
    // makes mask targets, the train sink's val_batcher included.
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
  if (key == "lr0" || key == "momentum" || key == "weight_decay") {  // the optimizer's, inside the sink
    if (sink_rc && has_param(sink_rc, "optimizer")) {
      return {"stages." + sink + ".params.optimizer.params." + key + "=" + text};
    }
  }
  // Any other word: the parameter of that name of the one stage that has it.
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
    // A parameter of a component the sink's pipeline entry names (patience=: its early_stopping
    // callback's, lrf=: its scheduler's).
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

void apply_overrides(json& document, const std::vector<std::string>& overrides_given,
                     const Registry& registry, Diagnostics& out) {
  // A word given twice (epochs=3 ... epochs=5) is refused, as a key given twice in the file is:
  // which one was meant is not for yoloflow to guess. The first is kept, so that the other
  // problems are still found.
  std::vector<std::string> overrides_in;
  for (const auto& item : overrides_given) {
    const auto eq = item.find('=');
    const std::string key = item.substr(0, eq);
    const auto earlier = eq == std::string::npos || eq == 0
                             ? overrides_in.end()
                             : std::find_if(overrides_in.begin(), overrides_in.end(), [&](const std::string& o) {
                                 return o.compare(0, key.size() + 1, key + "=") == 0;
                               });
    if (earlier != overrides_in.end()) {
      out.push_back({key, "'" + key + "' is given twice on the command line: " + *earlier + ", then " + item +
                              "; give it once"});
      continue;
    }
    overrides_in.push_back(item);
  }
  std::vector<std::string> overrides;
  // Ultralytics' words that train does not take but that ask for nothing (a saved run's
  // arguments at their defaults, predict's settings): taken, and named in one note.
  const bool training = !training_sink(document, registry).empty();
  std::string ignored;
  for (const auto& item : overrides_in) {
    const auto eq = item.find('=');
    if (training && eq != std::string::npos && eq > 0) {
      const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
      const bool none = find_ultralytics_argument(key) != nullptr && is_ultralytics_none(value);  // not set: the default
      if (none || (!ultralytics_refusal(key, "train").empty() && ultralytics_word_asks_nothing(key, value, "train"))) {
        ignored += (ignored.empty() ? "" : " ") + item;
        continue;
      }
    }
    const auto expanded = eq == std::string::npos || eq == 0
                              ? std::vector<std::string>{}
                              : expand_shortcut(item.substr(0, eq), item.substr(eq + 1), document, overrides_in,
                                                registry, out);
    if (expanded.empty()) {
      overrides.push_back(item);
    } else {
      for (const auto& e : expanded) {
        // Two words for one defaulted component (box= cls=) write it out once.
        if (!e.empty() && std::find(overrides.begin(), overrides.end(), e) == overrides.end()) overrides.push_back(e);
      }
    }
  }
  if (!ignored.empty()) {
    YF_LOG_INFO(ultralytics_ignored_note("train", ignored));
  }
  for (const auto& item : overrides) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      out.push_back({item, "an override looks like path=value, e.g. epochs=3 or "
                           "stages.letterbox.params.auto=true"});
      continue;
    }
    const std::string key = item.substr(0, eq);
    const json value = parse_value(item.substr(eq + 1));
    // 1e400 reads as infinity, which no setting takes and a document writes back as null.
    if (std::string where; !all_numbers_finite(value, key, where)) {
      out.push_back({where, item.substr(eq + 1) + " " + kNonFiniteNumber});
      continue;
    }
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
        if (last && seg == "plugin") drop_params_of_replaced_plugin(cur, value, i == 2 && segs[0] == "stages",
                                                                    i == 2 && segs[0] == "monitors", registry);
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
      if (i == 0) {
        // A word may also be a stage's parameter name (a shortcut) or one of the named shortcuts.
        for (const auto& [name, rc] : known_stages(document, registry)) {
          for (const auto& n : rc->info.schema.names()) candidates.push_back(n);
          for (const auto& nested : nested_components(document["stages"][name], *rc, registry)) {
            for (const auto& n : nested.second->info.schema.names()) candidates.push_back(n);
          }
        }
        for (const char* n : {"data", "model", "lr0", "momentum", "weight_decay"}) candidates.emplace_back(n);
      }
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
      out.push_back({key, msg});
      failed = true;
    }
  }
  // As Ultralytics warns: optimizer=auto picks lr0 and momentum itself.
  if (const std::string warning = optimizer_auto_warning(document, overrides_in, registry); !warning.empty()) {
    YF_LOG_WARN(warning);
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
