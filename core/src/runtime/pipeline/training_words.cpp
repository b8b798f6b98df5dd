#include "runtime/pipeline/training_words.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>

#include "runtime/pipeline/component_spec.h"
#include "runtime/pipeline/json_text.h"
#include "runtime/pipeline/task_components.h"
#include "runtime/pipeline/word_values.h"
#include "runtime/util/ascii_lower.h"

namespace yoloflow::core {
namespace {

// The value of the last `key=` among `words`; empty when none names it.
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

// A stage whose component is the first of `plugins` that the pipeline has.
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

// The most epochs a pipeline runs (its `epochs` setting's range): a count of epochs beyond it
// means nothing, and would not fit the int it is kept in.
constexpr double kMaxEpochs = 100000;

// The mosaic probability and the epochs it is closed for, as a stage's `p` holds them: a number
// (never closed), or Ultralytics' schedule {"steps": {"0": p, "-N": 0.0}}.
void read_mosaic(const json& p, double& prob, int& close) {
  prob = 1.0;
  close = 0;
  if (p.is_number()) {
    prob = p.get<double>();
  } else if (p.is_object() && p.contains("steps") && p["steps"].is_object()) {
    for (const auto& [k, v] : p["steps"].items()) {
      if (!v.is_number()) continue;
      if (k == "0") prob = v.get<double>();
      else if (!k.empty() && k[0] == '-' && v.get<double>() == 0.0) close = std::atoi(k.c_str() + 1);
    }
  }
}

// The probability and closing epochs of stage `stage`'s `p` as read_mosaic reads them; `unset`
// (never closed) when the stage gives no `p`.
void read_stage_p(const json& document, const std::string& stage, double unset, double& prob, int& close) {
  const json& st = document["stages"][stage];
  read_mosaic(st.contains("params") && st["params"].contains("p") ? st["params"]["p"] : json(unset), prob, close);
}

// A stage's `p`: the probability, closed for the last `close` epochs when that is more than 0.
json closing_schedule(double prob, int close) {
  if (close > 0 && prob > 0) return {{"steps", {{"0", prob}, {"-" + std::to_string(close), 0.0}}}};
  return prob;
}

std::string mosaic_override(const std::string& stage, double prob, int close) {
  return "stages." + stage + ".params.p=" + closing_schedule(prob, close).dump();
}

// mixup=P or cutmix=P on a pipeline without that stage: one of `plugin` after the first of
// `after` the pipeline has (where Ultralytics applies them: MixUp after mosaic and
// random_perspective, CutMix after MixUp, both before hsv and flip), its consumers reading from
// it instead.
bool add_mixing_stage(json& document, const Registry& registry, const std::string& plugin,
                      std::initializer_list<const char*> after_plugins, const json& p, Diagnostics& out) {
  const std::string after = stage_of(document, registry, after_plugins);
  if (after.empty() || registry.find(Kind::Augmentation, plugin) == nullptr) {
    out.push_back({plugin, plugin + "=: this pipeline has no mosaic or random_perspective stage to put the " + plugin +
                               " stage after; add a stage {\"plugin\": \"" + plugin + "\"} to it"});
    return false;
  }
  std::string name = plugin;
  for (int n = 2; document["stages"].contains(name); ++n) name = plugin + std::to_string(n);
  for (auto& [stage_name, stage] : document["stages"].items()) {
    if (!stage.is_object()) continue;
    if (stage.contains("input") && stage["input"] == after) stage["input"] = name;
    if (stage.contains("inputs") && stage["inputs"].is_array()) {
      for (auto& in : stage["inputs"]) {
        if (in == after) in = name;
      }
    }
  }
  document["stages"][name] = {{"plugin", plugin}, {"input", after}, {"params", {{"p", p}}}};
  return true;
}

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

// The epochs at the end without mosaic: close_mosaic= among the words, else the mosaic stage's
// schedule; 0 when none.
int closing_epochs(const json& document, const Registry& registry, const std::vector<std::string>& words) {
  if (has_word(words, "close_mosaic")) {
    const json v = parse_word_value(word_text(words, "close_mosaic"));
    // Out of range is refused where the close_mosaic word itself is read.
    return v.is_number() && v.get<double>() >= 0 && v.get<double>() <= kMaxEpochs ? static_cast<int>(v.get<double>()) : 0;
  }
  const std::string stage = stage_of(document, registry, {"mosaic", "mosaic_perspective"});
  if (stage.empty()) return 0;
  double prob = 1.0;
  int close = 0;
  read_stage_p(document, stage, 1.0, prob, close);
  return close;
}

// The stages that mix images (mosaic, mixup, cutmix), which rectangular training turns off.
std::vector<std::string> mixing_stages(const json& document, const Registry& registry) {
  std::vector<std::string> out;
  for (const auto& [name, rc] : known_stages(document, registry)) {
    const std::string& p = rc->info.name;
    if (p == "mosaic" || p == "mosaic_perspective" || p == "mixup" || p == "cutmix") out.push_back(name);
  }
  return out;
}

// rect=True among the words (Ultralytics' rectangular training).
bool rect_training(const std::vector<std::string>& words) {
  bool b = false;
  return has_word(words, "rect") && parse_word_bool(word_text(words, "rect"), b) && b;
}

}  // namespace

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
  const std::string at = "stages." + sink + ".params.";
  expanded.clear();
  bool b = false;
  double x = 0;
  if (key == "task") {
    // A task with built-in components (detect, segment) is the model's task: the pipeline
    // overrides write it with the model word's rules (overrides.cpp).
    if (task_components(ascii_lower(text)) != nullptr) return false;
    out.push_back({key, "task=" + text + ": yoloflow trains the tasks detect and segment (the model's name says which: "
                                         "yolo11n, yolo11n-seg; docs/segmentation.md)"});
    return true;
  }
  if (key == "mode") {
    if (ascii_lower(text) != "train") {
      out.push_back({key, "mode=" + text + ": the command is the mode; for " + text + " run `yoloflow " + text +
                              " model=... ...`"});
    }
    return true;
  }
  if (key == "project" || key == "exist_ok") {
    // Where the run is written: the commands that make run folders take these words out
    // first (cli/run_folder_words.h); they change nothing in the pipeline.
    return true;
  }
  if (key == "optimizer") {
    // Ultralytics' names in any case (SGD, AdamW): the optimizer plugin of that lower-case name.
    const std::string name = ascii_lower(text);
    if (registry.find(Kind::Optimizer, name) == nullptr) {
      std::string list;
      for (const auto& n : registry.names(Kind::Optimizer)) list += (list.empty() ? "" : ", ") + n;
      out.push_back({key, "Ultralytics' `optimizer` " + text + " is not supported by yoloflow: no optimizer plugin "
                              "of that name is loaded; the optimizers are: " + list});
      return true;
    }
    expanded.push_back(at + "optimizer.plugin=" + name);
    return true;
  }
  if (key == "freeze") {
    // Ultralytics' freeze=N freezes layers 0..N-1, freeze=[0,3,5] those layers, None none.
    const json v = parse_word_value(text);
    json layers = json::array();
    // The list is written out: a count is bounded, so that freeze=99999999999 cannot fill the
    // memory (YOLO11 has 24 layers; the train sink names the ones a model lacks).
    constexpr long long kMaxFrozen = 1000;
    if (v.is_number_integer() && v.get<long long>() > kMaxFrozen) {
      out.push_back({key, "freeze=" + text + ": expected a number of layers to freeze from the first, at most " +
                              std::to_string(kMaxFrozen) + " (YOLO11 has 24)"});
      return true;
    }
    if (v.is_number_integer() && v.get<long long>() >= 0) {
      for (long long i = 0; i < v.get<long long>(); ++i) layers.push_back(i);
    } else if (v.is_array() && std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_number_integer(); })) {
      layers = v;
    } else if (!(text.empty() || v.is_null() || (v.is_string() && ascii_lower(v.get<std::string>()) == "none"))) {
      out.push_back({key, "freeze=" + text + ": expected a number of layers to freeze from the first (freeze=10: "
                          "layers 0-9) or a list of layer indices (freeze=[0,3,5])"});
      return true;
    }
    expanded.push_back(at + "freeze=" + layers.dump());
    return true;
  }
  if (key == "single_cls" || key == "classes" || key == "fraction") {
    // What the dataset reader reads: every box as class 0, the boxes of some classes, part of
    // the train split (the reader cuts only the train split, so validation reads all of it).
    json value;
    if (key == "single_cls") {
      if (!bool_word(key, text, b, out)) return true;
      value = b;
    } else if (key == "fraction") {
      if (!number_word(key, text, x, out)) return true;
      if (!(x > 0 && x <= 1)) {
        out.push_back({key, "fraction=" + text + ": expected a share of the train split's images, above 0 and at most 1"});
        return true;
      }
      value = x;
    } else {
      json v = parse_word_value(text);
      if (v.is_null() || (v.is_string() && ascii_lower(v.get<std::string>()) == "none")) v = json::array();
      if (!v.is_array()) v = json::array({v});
      if (!std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_number_integer() && e.get<long long>() >= 0; })) {
        out.push_back({key, "classes=" + text + ": expected class ids, e.g. classes=0 or classes=[0,2] (data.yaml's "
                                               "names give each id)"});
        return true;
      }
      value = v;
    }
    const auto paths = source_param_paths(document, registry, sink, key);
    if (paths.empty()) {
      out.push_back({key, key + "=: this pipeline's source has no `" + key + "` parameter"});
      return true;
    }
    for (const auto& path : paths) expanded.push_back(path + "=" + value.dump());
    return true;
  }
  if (key == "cos_lr") {
    if (bool_word(key, text, b, out)) expanded.push_back(at + "scheduler.plugin=" + (b ? "cosine" : "linear"));
    return true;
  }
  if (key == "amp") {
    if (bool_word(key, text, b, out)) expanded.push_back(at + "precision.plugin=" + (b ? "amp" : "fp32"));
    return true;
  }
  if (key == "val") {
    // val=False: Ultralytics validates only after the final epoch, as val_every=0 does.
    if (bool_word(key, text, b, out)) expanded.push_back(at + "val_every=" + (b ? "1" : "0"));
    return true;
  }
  if (key == "nbs") {
    expanded.push_back(at + "nominal_batch=" + text);
    return true;
  }
  if (key == "conf" || key == "iou") {  // during training they are validation's
    expanded.push_back(at + "val_" + key + "=" + text);
    return true;
  }
  if (key == "save") {
    if (bool_word(key, text, b, out) && !b) {
      out.push_back({key, "Ultralytics' `save` False is not supported by yoloflow: training always writes "
                          "weights/last.pt and best.pt (they are what --resume and val read)"});
    }
    return true;
  }
  if (key == "resume") {
    if (parse_word_bool(text, b) && !b) return true;  // resume=False: a new run, the default
    out.push_back({key, "resume=: continue a run with `yoloflow train --resume RUN_DIR` (or "
                        "RUN_DIR/weights/last.pt), or resume=RUN_DIR/weights/last.pt on `yoloflow train`"});
    return true;
  }
  if (key == "pretrained") {
    // True: the weights the pipeline or model=FILE.pt names; False: none (the architecture
    // alone, from scratch); a path: those weights.
    const json v = parse_word_value(text);
    if (v.is_boolean()) {
      json& params = document["stages"][sink]["params"];
      if (!v.get<bool>() && params.is_object()) params.erase("weights");
    } else if (v.is_string() && !v.get<std::string>().empty()) {
      const std::filesystem::path file(v.get<std::string>());
      expanded.push_back(at + "weights=" +
                         (std::filesystem::exists(file) ? std::filesystem::absolute(file).lexically_normal().string()
                                                        : file.string()));
    } else {
      out.push_back({key, "pretrained=" + text + ": expected True, False or a weights file"});
    }
    return true;
  }
  if (key == "save_period") {
    // The periodic_checkpoints callback's; a pipeline without it gets it for save_period > 0
    // (and has nothing to turn off for Ultralytics' -1).
    json& params = document["stages"][sink]["params"];
    if (!params.is_object()) return true;
    if (!params.contains("callbacks") || !params["callbacks"].is_array()) params["callbacks"] = json::array();
    json& callbacks = params["callbacks"];
    const json v = parse_word_value(text);
    if (!v.is_number_integer()) {
      out.push_back({key, "save_period=" + text + ": expected a whole number of epochs (-1 or 0: off)"});
      return true;
    }
    const long long n = std::max<long long>(0, v.get<long long>());
    for (std::size_t i = 0; i < callbacks.size(); ++i) {
      if (callbacks[i].is_object() && callbacks[i].value("plugin", std::string()) == "periodic_checkpoints") {
        expanded.push_back(at + "callbacks." + std::to_string(i) + ".params.save_period=" + std::to_string(n));
        return true;
      }
    }
    if (n > 0 && registry.find(Kind::Callback, "periodic_checkpoints") != nullptr) {
      callbacks.push_back({{"plugin", "periodic_checkpoints"}, {"params", {{"save_period", n}}}});
    }
    return true;
  }
  if (key == "plots") {
    // Every image the run draws: results.png (the sink's `plots`) and the training batches
    // (train_batch*.jpg, the train_batch_images callback). False leaves results.csv alone.
    if (!bool_word(key, text, b, out)) return true;
    json& params = document["stages"][sink]["params"];
    if (!params.is_object()) return true;
    params["plots"] = b;
    json callbacks = params.contains("callbacks") && params["callbacks"].is_array() ? params["callbacks"] : json::array();
    json kept = json::array();
    bool present = false;
    for (const auto& c : callbacks) {
      const bool drawing = c.is_object() && c.value("plugin", std::string()) == "train_batch_images";
      present = present || drawing;
      if (!drawing || b) kept.push_back(c);
    }
    if (b && !present && registry.find(Kind::Callback, "train_batch_images") != nullptr) {
      kept.push_back({{"plugin", "train_batch_images"}});
    }
    params["callbacks"] = kept;
    return true;
  }
  if (key == "rect") {
    // Rectangular training batches; as Ultralytics, they come without mosaic, mixup and cutmix
    // (a batch's shape is its images' own, which a mosaic is not).
    if (!bool_word(key, text, b, out)) return true;
    expanded.push_back(at + "train_rect=" + (b ? "true" : "false"));
    if (b) {
      for (const auto& stage : mixing_stages(document, registry)) expanded.push_back("stages." + stage + ".params.p=0.0");
    }
    return true;
  }
  if ((key == "mosaic" || key == "close_mosaic" || key == "mixup" || key == "cutmix") && rect_training(words)) {
    return true;  // rect=True has turned them off
  }
  if (key == "mosaic" || key == "close_mosaic") {
    const std::string stage = stage_of(document, registry, {"mosaic", "mosaic_perspective"});
    if (stage.empty()) {
      out.push_back({key, key + "=: this pipeline has no mosaic stage"});
      return true;
    }
    double prob = 1.0;
    int close = 0;
    read_stage_p(document, stage, 1.0, prob, close);
    if (has_word(words, "mosaic") && !number_word("mosaic", word_text(words, "mosaic"), prob, out)) return true;
    if (has_word(words, "close_mosaic")) {
      double c = 0;
      if (!number_word("close_mosaic", word_text(words, "close_mosaic"), c, out)) return true;
      if (c < 0 || c != std::floor(c) || c > kMaxEpochs) {
        out.push_back({"close_mosaic", "close_mosaic=" + word_text(words, "close_mosaic") +
                                           ": expected a whole number of epochs from 0 to 100000"});
        return true;
      }
      close = static_cast<int>(c);
    }
    expanded.push_back(mosaic_override(stage, prob, close));
    // Ultralytics' close_mosaic turns mixup and cutmix off with mosaic.
    for (const char* plugin : {"mixup", "cutmix"}) {
      const std::string other = stage_of(document, registry, {plugin});
      if (!other.empty() && !has_word(words, plugin)) {
        double other_prob = 0.0;
        int other_close = 0;
        read_stage_p(document, other, 0.0, other_prob, other_close);
        expanded.push_back(mosaic_override(other, other_prob, close));
      }
    }
    return true;
  }
  if (key == "mixup" || key == "cutmix") {
    if (!number_word(key, text, x, out)) return true;
    if (x < 0 || x > 1) {
      out.push_back({key, key + "=" + text + ": expected a probability from 0 to 1"});
      return true;
    }
    // Closed with mosaic for the last close_mosaic epochs, as Ultralytics closes them.
    const int close = closing_epochs(document, registry, words);
    const std::string stage = stage_of(document, registry, {key == "mixup" ? "mixup" : "cutmix"});
    if (!stage.empty()) {
      expanded.push_back(mosaic_override(stage, x, close));
    } else if (x > 0) {
      const json p = closing_schedule(x, close);
      if (key == "mixup") {
        add_mixing_stage(document, registry, "mixup", {"random_perspective", "mosaic_perspective", "mosaic"}, p, out);
      } else {
        add_mixing_stage(document, registry, "cutmix", {"mixup", "random_perspective", "mosaic_perspective", "mosaic"}, p,
                         out);
      }
    }
    return true;
  }
  return false;
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
