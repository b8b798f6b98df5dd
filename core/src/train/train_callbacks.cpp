#include "train/train_callbacks.h"

#include <map>

#include "pipeline/component_factory.h"
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
  if (!specs.is_array()) return;
  std::map<std::string, int> seen;
  for (std::size_t i = 0; i < specs.size(); ++i) {
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
}

template <class F>
void TrainCallbacks::each(const char* hook, F&& call) {
  for (auto& e : entries_) {
    const std::string who = "callback '" + e.name + "' (" + e.path + ", " + e.file + ") failed in " + hook + ": ";
    try {
      call(e);
    } catch (const Error& x) {
      throw Error(who + x.what(), x.exit_code());
    } catch (const std::exception& x) {
      throw Error(who + x.what());
    } catch (...) {
      throw Error(who + "unknown exception");
    }
  }
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
    try {
      s = e.callback->state();
    } catch (const std::exception& x) {
      throw Error("callback '" + e.name + "' (" + e.path + ", " + e.file + ") failed in state(): " + x.what());
    }
    if (!s.is_null()) out[e.name] = std::move(s);
  }
  return out;
}

void TrainCallbacks::load_states(const json& states) {
  if (!states.is_object()) return;
  each("load_state", [&](Entry& e) {
    if (states.contains(e.name)) e.callback->load_state(states[e.name]);
  });
}

}  // namespace yoloflow::core
