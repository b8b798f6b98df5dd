#include "training/callbacks/ema_callback.h"

#include <map>
#include <memory>
#include <optional>

#include "training/callbacks/model_ema.h"
#include "yoloflow/callback.h"
#include "yoloflow/training_view.h"
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

  void on_optimizer_step(TrainingView& training) override { average(training.model()).update(training.model()); }
  // Validation scores the average: swapped into the model's own tensors, and back after.
  void on_validation_start(TrainingView& training) override {
    swapped_ = average(training.model()).swap_into(training.model());
  }
  void on_validation_end(TrainingView& training) override {
    if (swapped_.empty()) return;
    ema_->restore(training.model(), swapped_);
    swapped_.clear();
  }

  // The average is the run's weights to deploy, and counts its own updates.
  void save_tensors(CheckpointTensors& out) const override {
    if (ema_) {
      out.put_deploy_weights(ema_->state(), ema_->updates());
    } else if (!pending_.empty()) {
      out.put_deploy_weights(pending_, pending_updates_);  // resumed, no step since
    }
  }
  // It comes back from the checkpoint's deploy weights, attached to the model at the first
  // hook that sees the model.
  void load_tensors(const CheckpointTensors& in) override {
    pending_ = in.deploy_weights();
    pending_updates_ = in.deploy_averaged_steps();
  }

 private:
  ModelEma& average(torch::nn::Module& model) {
    if (!ema_) {
      ema_ = std::make_unique<ModelEma>(model, decay_, tau_);
      if (!pending_.empty()) {
        std::map<std::string, torch::Tensor> state(pending_.begin(), pending_.end());
        ema_->load_state(state, pending_updates_);
        pending_.clear();
      }
    }
    return *ema_;
  }

  double decay_ = 0.9999, tau_ = 2000.0;
  std::unique_ptr<ModelEma> ema_;
  std::vector<torch::Tensor> swapped_;  // the model's own values while the average is in it
  NamedTensors pending_;                // a resumed average, until the model is seen
  std::int64_t pending_updates_ = 0;
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

}  // namespace yoloflow::core
