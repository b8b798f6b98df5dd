#pragma once
// The trainer's callbacks (yoloflow/callback.h): created from the train stage's `callbacks`
// list, called in that order at every hook point, each one's exceptions turned into an error
// naming it, and their state and tensors gathered for a checkpoint and handed back on resume,
// keyed by callback name.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/plugin/registry.h"
#include "yoloflow/callback.h"
#include "yoloflow/training_view.h"

namespace yoloflow::core {

// What the callbacks of one hook asked for; the sink acts on it once they all ran.
struct CallbackRequests final : TrainControl {
  std::vector<std::string> checkpoints;  // file names in the weights folder
  std::string stop_reason;               // empty: no stop asked
  void save_checkpoint(const std::string& file) override;
  void request_stop(const std::string& reason) override;
};

class TrainCallbacks {
 public:
  TrainCallbacks() = default;
  // `specs`: the resolved list [{"plugin", "params"}, ...] at JSON path `path`
  // ("stages.train.params.callbacks").
  TrainCallbacks(const Registry& registry, const json& specs, const std::string& path, const StageContext& context);

  bool empty() const { return entries_.empty(); }
  // The callbacks, in order (owned here).
  std::vector<Callback*> callbacks() const;

  void train_start(const TrainRun& run, CallbackRequests& requests);
  void batch_start(const Batch& batch, const TrainProgress& progress, CallbackRequests& requests);
  void batch_end(const TrainProgress& progress, CallbackRequests& requests);
  void optimizer_step(TrainingView& training);
  void validation_start(TrainingView& training);
  void validation_end(TrainingView& training);
  void epoch_end(const EpochSummary& epoch, const TrainProgress& progress, CallbackRequests& requests);
  void train_end(const TrainProgress& progress, CallbackRequests& requests);

  // {name: state} of every callback whose state is not null.
  json states() const;
  // Gives each callback the state stored under its name (a callback without one keeps its own).
  void load_states(const json& states);

  // The callbacks' tensors for a checkpoint: each one's own, by callback name, and the deploy
  // weights (the checkpoint's `ema` entry) when one gives them. Throws Error naming a second
  // callback that gives deploy weights too.
  struct SavedTensors {
    std::map<std::string, NamedTensors> own;
    NamedTensors deploy;
    std::int64_t deploy_averaged_steps = 0;
  };
  SavedTensors save_tensors() const;
  // Hands each callback its tensors back (and the checkpoint's deploy weights).
  void load_tensors(const SavedTensors& saved);

 private:
  struct Entry {
    std::string name;  // plugin name; "name#2" for its second entry
    std::string path;  // "stages.train.params.callbacks.0"
    std::string file;  // its plugin library, or "<built-in>"
    std::unique_ptr<Callback> callback;
  };
  template <class E, class F>
  static void call_one(E& entry, const char* hook, F&& call);
  template <class F>
  void each(const char* hook, F&& call);
  std::vector<Entry> entries_;
};

}  // namespace yoloflow::core
