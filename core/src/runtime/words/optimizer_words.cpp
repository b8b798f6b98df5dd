// Ultralytics' training words about how the weights are optimised: optimizer= names the optimizer
// plugin, cos_lr= chooses the scheduler, amp= the precision, nbs= the nominal batch the
// gradients are accumulated to, and freeze= the layers left as they are. (lr0=, momentum= and
// weight_decay= are the optimizer's own parameters: shortcut_words.cpp.)
#include <algorithm>

#include "runtime/util/ascii_lower.h"
#include "runtime/words/training_word_groups.h"
#include "runtime/words/word_values.h"

namespace yoloflow::core {
namespace {

bool optimizer_word(const TrainingWord& w) {
  // Ultralytics' names in any case (SGD, AdamW): the optimizer plugin of that lower-case name.
  const std::string name = ascii_lower(w.text);
  if (w.registry.find(Kind::Optimizer, name) == nullptr) {
    std::string list;
    for (const auto& n : w.registry.names(Kind::Optimizer)) list += (list.empty() ? "" : ", ") + n;
    w.out.push_back({w.key, "Ultralytics' `optimizer` " + w.text + " is not supported by yoloflow: no optimizer plugin "
                            "of that name is loaded; the optimizers are: " + list});
    return true;
  }
  w.expanded.push_back(w.at + "optimizer.plugin=" + name);
  return true;
}

bool freeze_word(const TrainingWord& w) {
  // Ultralytics' freeze=N freezes layers 0..N-1, freeze=[0,3,5] those layers, None none.
  const json v = parse_word_value(w.text);
  json layers = json::array();
  // The list is written out: a count is bounded, so that freeze=99999999999 cannot fill the
  // memory (YOLO11 has 24 layers; the train sink names the ones a model lacks).
  constexpr long long kMaxFrozen = 1000;
  if (v.is_number_integer() && v.get<long long>() > kMaxFrozen) {
    w.out.push_back({w.key, "freeze=" + w.text + ": expected a number of layers to freeze from the first, at most " +
                                std::to_string(kMaxFrozen) + " (YOLO11 has 24)"});
    return true;
  }
  if (v.is_number_integer() && v.get<long long>() >= 0) {
    for (long long i = 0; i < v.get<long long>(); ++i) layers.push_back(i);
  } else if (v.is_array() && std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_number_integer(); })) {
    layers = v;
  } else if (!(w.text.empty() || v.is_null() || (v.is_string() && ascii_lower(v.get<std::string>()) == "none"))) {
    w.out.push_back({w.key, "freeze=" + w.text + ": expected a number of layers to freeze from the first (freeze=10: "
                            "layers 0-9) or a list of layer indices (freeze=[0,3,5])"});
    return true;
  }
  w.expanded.push_back(w.at + "freeze=" + layers.dump());
  return true;
}

// A True/False word that chooses the plugin of the sink's component `component`.
bool plugin_choice_word(const TrainingWord& w, const std::string& component, const char* if_true,
                        const char* if_false) {
  bool b = false;
  if (bool_word(w.key, w.text, b, w.out)) {
    w.expanded.push_back(w.at + component + ".plugin=" + (b ? if_true : if_false));
  }
  return true;
}

}  // namespace

bool expand_optimizer_word(const TrainingWord& w) {
  if (w.key == "optimizer") return optimizer_word(w);
  if (w.key == "freeze") return freeze_word(w);
  if (w.key == "cos_lr") return plugin_choice_word(w, "scheduler", "cosine", "linear");
  if (w.key == "amp") return plugin_choice_word(w, "precision", "amp", "fp32");
  if (w.key == "nbs") {
    w.expanded.push_back(w.at + "nominal_batch=" + w.text);
    return true;
  }
  return false;
}

}  // namespace yoloflow::core
