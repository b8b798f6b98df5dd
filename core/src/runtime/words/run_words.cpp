// Ultralytics' training words about the run itself rather than its optimisation or its data:
// task= and mode= (the command and the model say them), project= and exist_ok= (the run folder),
// the weights it starts from (pretrained=), what it writes (save=, save_period=, plots=), how it
// validates (val=, conf=, iou=) and resume= (a flag of its own here).
#include <algorithm>
#include <filesystem>

#include "runtime/pipeline/task_components.h"
#include "runtime/util/ascii_lower.h"
#include "runtime/words/training_word_groups.h"
#include "runtime/words/word_values.h"

namespace yoloflow::core {
namespace {

bool task_word(const TrainingWord& w) {
  // A task with built-in components (detect, segment) is the model's task: the pipeline
  // overrides write it with the model word's rules (task_words.cpp).
  if (task_components(ascii_lower(w.text)) != nullptr) return false;
  w.out.push_back({w.key, "task=" + w.text + ": yoloflow trains the tasks detect and segment (the model's name says "
                                             "which: yolo11n, yolo11n-seg; docs/segmentation.md)"});
  return true;
}

bool mode_word(const TrainingWord& w) {
  if (ascii_lower(w.text) != "train") {
    w.out.push_back({w.key, "mode=" + w.text + ": the command is the mode; for " + w.text + " run `yoloflow " + w.text +
                                " model=... ...`"});
  }
  return true;
}

bool save_word(const TrainingWord& w) {
  bool b = false;
  if (bool_word(w.key, w.text, b, w.out) && !b) {
    w.out.push_back({w.key, "Ultralytics' `save` False is not supported by yoloflow: training always writes "
                            "weights/last.pt and best.pt (they are what --resume and val read)"});
  }
  return true;
}

bool resume_refusal(const TrainingWord& w) {
  bool b = false;
  if (parse_word_bool(w.text, b) && !b) return true;  // resume=False: a new run, the default
  w.out.push_back({w.key, "resume=: continue a run with `yoloflow train --resume RUN_DIR` (or "
                          "RUN_DIR/weights/last.pt), or resume=RUN_DIR/weights/last.pt on `yoloflow train`"});
  return true;
}

bool pretrained_word(const TrainingWord& w) {
  // True: the weights the pipeline or model=FILE.pt names; False: none (the architecture
  // alone, from scratch); a path: those weights.
  const json v = parse_word_value(w.text);
  if (v.is_boolean()) {
    json& params = w.document["stages"][w.sink]["params"];
    if (!v.get<bool>() && params.is_object()) params.erase("weights");
  } else if (v.is_string() && !v.get<std::string>().empty()) {
    const std::filesystem::path file(v.get<std::string>());
    w.expanded.push_back(w.at + "weights=" +
                         (std::filesystem::exists(file) ? std::filesystem::absolute(file).lexically_normal().string()
                                                        : file.string()));
  } else {
    w.out.push_back({w.key, "pretrained=" + w.text + ": expected True, False or a weights file"});
  }
  return true;
}

bool save_period_word(const TrainingWord& w) {
  // The periodic_checkpoints callback's; a pipeline without it gets it for save_period > 0
  // (and has nothing to turn off for Ultralytics' -1).
  json& params = w.document["stages"][w.sink]["params"];
  if (!params.is_object()) return true;
  if (!params.contains("callbacks") || !params["callbacks"].is_array()) params["callbacks"] = json::array();
  json& callbacks = params["callbacks"];
  const json v = parse_word_value(w.text);
  if (!v.is_number_integer()) {
    w.out.push_back({w.key, "save_period=" + w.text + ": expected a whole number of epochs (-1 or 0: off)"});
    return true;
  }
  const long long n = std::max<long long>(0, v.get<long long>());
  for (std::size_t i = 0; i < callbacks.size(); ++i) {
    if (callbacks[i].is_object() && callbacks[i].value("plugin", std::string()) == "periodic_checkpoints") {
      w.expanded.push_back(w.at + "callbacks." + std::to_string(i) + ".params.save_period=" + std::to_string(n));
      return true;
    }
  }
  if (n > 0 && w.registry.find(Kind::Callback, "periodic_checkpoints") != nullptr) {
    callbacks.push_back({{"plugin", "periodic_checkpoints"}, {"params", {{"save_period", n}}}});
  }
  return true;
}

bool plots_word(const TrainingWord& w) {
  // Every image the run draws: results.png (the sink's `plots`) and the training batches
  // (train_batch*.jpg, the train_batch_images callback). False leaves results.csv alone.
  bool b = false;
  if (!bool_word(w.key, w.text, b, w.out)) return true;
  json& params = w.document["stages"][w.sink]["params"];
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
  if (b && !present && w.registry.find(Kind::Callback, "train_batch_images") != nullptr) {
    kept.push_back({{"plugin", "train_batch_images"}});
  }
  params["callbacks"] = kept;
  return true;
}

bool val_word(const TrainingWord& w) {
  // val=False: Ultralytics validates only after the final epoch, as val_every=0 does.
  bool b = false;
  if (bool_word(w.key, w.text, b, w.out)) w.expanded.push_back(w.at + "val_every=" + (b ? "1" : "0"));
  return true;
}

}  // namespace

bool expand_run_word(const TrainingWord& w) {
  if (w.key == "task") return task_word(w);
  if (w.key == "mode") return mode_word(w);
  // Where the run is written: the commands that make run folders take these words out first
  // (runtime/words/run_folder_words.h); they change nothing in the pipeline.
  if (w.key == "project" || w.key == "exist_ok") return true;
  if (w.key == "save") return save_word(w);
  if (w.key == "resume") return resume_refusal(w);
  if (w.key == "pretrained") return pretrained_word(w);
  if (w.key == "save_period") return save_period_word(w);
  if (w.key == "plots") return plots_word(w);
  if (w.key == "val") return val_word(w);
  if (w.key == "conf" || w.key == "iou") {  // during training they are validation's
    w.expanded.push_back(w.at + "val_" + w.key + "=" + w.text);
    return true;
  }
  return false;
}

}  // namespace yoloflow::core
