#include "train/ema_callback.h"

#include <memory>
#include <optional>

#include "yoloflow/callback.h"
#include "yoloflow/error.h"
#include "yoloflow/version.h"

namespace yoloflow::core {
namespace {

constexpr const char* kName = "ema";

class EmaCallback final : public Callback {
 public:
  static Schema schema() {
    Schema s;
    s.add_float("decay", 0.9999).range(0.0, 1.0).fixed().doc(
        "The average's decay once warmed up: each update keeps this much of the average.");
    s.add_float("tau", 2000.0).greater_than(0.0).fixed().doc(
        "Warm-up of the decay, in updates: decay x (1 - exp(-updates / tau)), so early weights fade fast.");
    return s;
  }
  void configure(const Params& p, const StageContext&) override {
    decay_ = p.get_float("decay");
    tau_ = p.get_float("tau");
  }
  ModelEma& attach(torch::nn::Module& model) {
    if (!ema_) ema_ = std::make_unique<ModelEma>(model, decay_, tau_);
    return *ema_;
  }
  // Its state is the checkpoint's `ema` entry (tensors, read by val/predict/export), not JSON.

 private:
  double decay_ = 0.9999, tau_ = 2000.0;
  std::unique_ptr<ModelEma> ema_;
};

// Position of the first `ema` entry of a callbacks list; absent when it has none.
std::optional<std::size_t> ema_entry(const json& callbacks) {
  if (!callbacks.is_array()) return std::nullopt;
  for (std::size_t i = 0; i < callbacks.size(); ++i) {
    if (callbacks[i].is_object() && callbacks[i].value("plugin", std::string()) == kName) return i;
  }
  return std::nullopt;
}

}  // namespace

void register_ema_callback(Registry& registry) {
  ComponentInfo info;
  info.kind = Kind::Callback;
  info.name = kName;
  info.summary = "Keeps an exponential moving average of the weights, updated after every optimizer step; "
                 "validation scores it and checkpoints save it as `ema` (what val, predict and export use).";
  info.schema = EmaCallback::schema();
  info.factory = []() -> Component* { return static_cast<Callback*>(new EmaCallback()); };
  registry.add(std::move(info), "<built-in>", "yoloflow", YOLOFLOW_VERSION_STRING);
}

json callbacks_with_ema(const json& callbacks, bool ema, const std::string& callbacks_path, const std::string& ema_path) {
  json out = callbacks.is_array() ? callbacks : json::array();
  const auto listed = ema_entry(out);
  if (!ema && listed) {
    throw InvalidInput(ema_path + " is false but " + callbacks_path + "." + std::to_string(*listed) +
                       " is the ema callback: remove one of them");
  }
  // Appended, not prepended, so that the listed entries keep their JSON paths in messages.
  if (ema && !listed) out.push_back(json{{"plugin", kName}, {"params", json::object()}});
  return out;
}

ModelEma* model_ema_of(const TrainCallbacks& callbacks, torch::nn::Module& model) {
  for (Callback* c : callbacks.callbacks()) {
    if (auto* ema = dynamic_cast<EmaCallback*>(c)) return &ema->attach(model);
  }
  return nullptr;
}

}  // namespace yoloflow::core
