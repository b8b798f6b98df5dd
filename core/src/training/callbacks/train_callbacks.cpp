#include "training/callbacks/train_callbacks.h"

#include <map>

#include "runtime/pipeline/component_factory.h"
#include "training/callbacks/host_callbacks.h"
#include "yoloflow/error.h"

namespace yoloflow::core {

void CallbackRequests::save_checkpoint(const std::string& file) {
  // A name, not a path: checkpoints stay in the run's weights folder.
  if (file.empty() || file.find('/') != std::string::npos || file.find('\\') != std::string::npos || file == "." ||
      file == "..") {
    throw InvalidInput("save_checkpoint(\"" + file + "\"): expected a file name in the run's weights folder, e.g. \"epoch10.pt\"");
  }
  checkpoints.push_back(file);
}

void CallbackRequests::request_stop(const std::string& reason) {
  if (stop_reason.empty()) stop_reason = reason.empty() ? "a callback stopped the run" : reason;
}

TrainCallbacks::TrainCallbacks(const Registry& registry, const json& specs, const std::string& path,
                               const StageContext& context) {
  std::map<std::string, int> seen;
  for (std::size_t i = 0; specs.is_array() && i < specs.size(); ++i) {
    Entry e;
    e.path = path + "." + std::to_string(i);
    const std::string plugin = specs[i].value("plugin", std::string());
    const int n = ++seen[plugin];
    e.name = n == 1 ? plugin : plugin + "#" + std::to_string(n);
    StageContext sub = context;
    sub.node = e.path;
    e.callback = create_component<Callback>(registry, Kind::Callback, specs[i], e.path, sub);
    e.file = registry.find(Kind::Callback, plugin)->file;  // made, so registered
    entries_.push_back(std::move(e));
  }
  // Those the program running this training added (host_callbacks.h), after the pipeline's.
  for (const HostCallback& h : host_callbacks()) {
    Entry e;
    const int n = ++seen[h.name];
    e.name = n == 1 ? h.name : h.name + "#" + std::to_string(n);
    e.path = "added by the host program";
    e.file = "<host>";
    e.callback = h.make();
    entries_.push_back(std::move(e));
  }
}

template <class E, class F>
void TrainCallbacks::call_one(E& e, const char* hook, F&& call) {
  try {
    call(e);
  } catch (...) {
    const std::string who = "callback '" + e.name + "' (" + e.path + ", " + e.file + ") failed in " + hook + ": ";
    try {
      throw;
    } catch (const Error& x) {
      throw Error(who + x.what(), x.exit_code());
    } catch (const std::exception& x) {
      throw Error(who + x.what());
    } catch (...) {
      throw Error(who + "unknown exception");
    }
  }
}

template <class F>
void TrainCallbacks::each(const char* hook, F&& call) {
  for (auto& e : entries_) call_one(e, hook, call);
}

void TrainCallbacks::train_start(const TrainRun& run, CallbackRequests& r) {
  each("on_train_start", [&](Entry& e) { e.callback->on_train_start(run, r); });
}
void TrainCallbacks::batch_start(const Batch& batch, const TrainProgress& p, CallbackRequests& r) {
  each("on_batch_start", [&](Entry& e) { e.callback->on_batch_start(batch, p, r); });
}
void TrainCallbacks::batch_end(const TrainProgress& p, CallbackRequests& r) {
  each("on_batch_end", [&](Entry& e) { e.callback->on_batch_end(p, r); });
}
void TrainCallbacks::optimizer_step(TrainingView& t) {
  each("on_optimizer_step", [&](Entry& e) { e.callback->on_optimizer_step(t); });
}
void TrainCallbacks::validation_start(TrainingView& t) {
  each("on_validation_start", [&](Entry& e) { e.callback->on_validation_start(t); });
}
void TrainCallbacks::validation_end(TrainingView& t) {
  // In reverse, as a stack: the last to swap weights in swaps them out first.
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    call_one(*it, "on_validation_end", [&](Entry& e) { e.callback->on_validation_end(t); });
  }
}
void TrainCallbacks::epoch_end(const EpochSummary& epoch, const TrainProgress& p, CallbackRequests& r) {
  each("on_epoch_end", [&](Entry& e) { e.callback->on_epoch_end(epoch, p, r); });
}
void TrainCallbacks::train_end(const TrainProgress& p, CallbackRequests& r) {
  each("on_train_end", [&](Entry& e) { e.callback->on_train_end(p, r); });
}

std::vector<Callback*> TrainCallbacks::callbacks() const {
  std::vector<Callback*> out;
  for (const auto& e : entries_) out.push_back(e.callback.get());
  return out;
}

json TrainCallbacks::states() const {
  json out = json::object();
  for (const auto& e : entries_) {
    json s;
    call_one(e, "state()", [&](const Entry& x) { s = x.callback->state(); });
    if (!s.is_null()) out[e.name] = std::move(s);
  }
  return out;
}

namespace {

// What one callback puts into a checkpoint, or finds there on resume.
class TensorSlots final : public CheckpointTensors {
 public:
  TensorSlots() = default;
  TensorSlots(NamedTensors own, NamedTensors deploy, std::int64_t steps)
      : own_(std::move(own)), deploy_(std::move(deploy)), steps_(steps) {}
  void put(NamedTensors tensors) override { own_ = std::move(tensors); }
  void put_deploy_weights(NamedTensors tensors, std::int64_t averaged_steps) override {
    deploy_ = std::move(tensors);
    steps_ = averaged_steps;
    gave_deploy_ = true;
  }
  const NamedTensors& get() const override { return own_; }
  const NamedTensors& deploy_weights() const override { return deploy_; }
  std::int64_t deploy_averaged_steps() const override { return steps_; }
  NamedTensors own_, deploy_;
  std::int64_t steps_ = 0;
  bool gave_deploy_ = false;
};

}  // namespace

TrainCallbacks::SavedTensors TrainCallbacks::save_tensors() const {
  SavedTensors out;
  std::string deploy_from;
  for (const auto& e : entries_) {
    TensorSlots slots;
    call_one(e, "save_tensors", [&](const Entry& x) { x.callback->save_tensors(slots); });
    if (!slots.own_.empty()) out.own[e.name] = std::move(slots.own_);
    if (slots.gave_deploy_) {
      if (!deploy_from.empty()) {
        throw Error("callbacks '" + deploy_from + "' and '" + e.name + "' (" + e.path +
                    ") both give the weights to deploy; a run has one set (list only one of them)");
      }
      deploy_from = e.name;
      out.deploy = std::move(slots.deploy_);
      out.deploy_averaged_steps = slots.steps_;
    }
  }
  return out;
}

void TrainCallbacks::load_tensors(const SavedTensors& saved) {
  each("load_tensors", [&](Entry& e) {
    const auto it = saved.own.find(e.name);
    const TensorSlots slots(it == saved.own.end() ? NamedTensors{} : it->second, saved.deploy, saved.deploy_averaged_steps);
    e.callback->load_tensors(slots);
  });
}

void TrainCallbacks::load_states(const json& states) {
  if (!states.is_object()) return;
  each("load_state", [&](Entry& e) {
    if (states.contains(e.name)) e.callback->load_state(states[e.name]);
  });
}

}  // namespace yoloflow::core
