// Ultralytics' training words about the augmentations that mix images: mosaic= and
// close_mosaic= write the mosaic stage's schedule together (closing mixup and cutmix with it, as
// Ultralytics does), mixup= and cutmix= set or add their stage, and rect=True turns all of them
// off for rectangular batches. A stage's `p` holds its probability, or Ultralytics' schedule
// {"steps": {"0": p, "-N": 0.0}} for a stage closed over the last N epochs.
#include <cmath>
#include <cstdlib>

#include "runtime/pipeline/component_spec.h"
#include "runtime/words/training_word_groups.h"
#include "runtime/words/word_values.h"

namespace yoloflow::core {
namespace {

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

bool rect_word(const TrainingWord& w) {
  // Rectangular training batches; as Ultralytics, they come without mosaic, mixup and cutmix
  // (a batch's shape is its images' own, which a mosaic is not).
  bool b = false;
  if (!bool_word(w.key, w.text, b, w.out)) return true;
  w.expanded.push_back(w.at + "train_rect=" + (b ? "true" : "false"));
  if (b) {
    for (const auto& stage : mixing_stages(w.document, w.registry)) {
      w.expanded.push_back("stages." + stage + ".params.p=0.0");
    }
  }
  return true;
}

// mosaic= and close_mosaic=: the mosaic stage's schedule from both words (the stage's own where
// one is not given), and mixup's and cutmix's closed with it.
bool mosaic_word(const TrainingWord& w) {
  const std::string stage = stage_of(w.document, w.registry, {"mosaic", "mosaic_perspective"});
  if (stage.empty()) {
    w.out.push_back({w.key, w.key + "=: this pipeline has no mosaic stage"});
    return true;
  }
  double prob = 1.0;
  int close = 0;
  read_stage_p(w.document, stage, 1.0, prob, close);
  if (has_word(w.words, "mosaic") && !number_word("mosaic", word_text(w.words, "mosaic"), prob, w.out)) return true;
  if (has_word(w.words, "close_mosaic")) {
    double c = 0;
    if (!number_word("close_mosaic", word_text(w.words, "close_mosaic"), c, w.out)) return true;
    if (c < 0 || c != std::floor(c) || c > kMaxEpochs) {
      w.out.push_back({"close_mosaic", "close_mosaic=" + word_text(w.words, "close_mosaic") +
                                           ": expected a whole number of epochs from 0 to 100000"});
      return true;
    }
    close = static_cast<int>(c);
  }
  w.expanded.push_back(mosaic_override(stage, prob, close));
  // Ultralytics' close_mosaic turns mixup and cutmix off with mosaic.
  for (const char* plugin : {"mixup", "cutmix"}) {
    const std::string other = stage_of(w.document, w.registry, {plugin});
    if (!other.empty() && !has_word(w.words, plugin)) {
      double other_prob = 0.0;
      int other_close = 0;
      read_stage_p(w.document, other, 0.0, other_prob, other_close);
      w.expanded.push_back(mosaic_override(other, other_prob, close));
    }
  }
  return true;
}

// mixup= and cutmix=: their stage's probability, or a stage of theirs added.
bool mixing_word(const TrainingWord& w) {
  double x = 0;
  if (!number_word(w.key, w.text, x, w.out)) return true;
  if (x < 0 || x > 1) {
    w.out.push_back({w.key, w.key + "=" + w.text + ": expected a probability from 0 to 1"});
    return true;
  }
  // Closed with mosaic for the last close_mosaic epochs, as Ultralytics closes them.
  const int close = closing_epochs(w.document, w.registry, w.words);
  const std::string stage = stage_of(w.document, w.registry, {w.key == "mixup" ? "mixup" : "cutmix"});
  if (!stage.empty()) {
    w.expanded.push_back(mosaic_override(stage, x, close));
  } else if (x > 0) {
    const json p = closing_schedule(x, close);
    if (w.key == "mixup") {
      add_mixing_stage(w.document, w.registry, "mixup", {"random_perspective", "mosaic_perspective", "mosaic"}, p,
                       w.out);
    } else {
      add_mixing_stage(w.document, w.registry, "cutmix", {"mixup", "random_perspective", "mosaic_perspective", "mosaic"},
                       p, w.out);
    }
  }
  return true;
}

}  // namespace

bool expand_augmentation_word(const TrainingWord& w) {
  if (w.key == "rect") return rect_word(w);
  const bool mosaic = w.key == "mosaic" || w.key == "close_mosaic";
  const bool mixing = w.key == "mixup" || w.key == "cutmix";
  if ((mosaic || mixing) && rect_training(w.words)) return true;  // rect=True has turned them off
  if (mosaic) return mosaic_word(w);
  if (mixing) return mixing_word(w);
  return false;
}

}  // namespace yoloflow::core
