#pragma once
// Callbacks that the program running a training adds to the pipeline's own, as Lightning's
// Trainer(callbacks=...) takes them: the Python module's add_callback. They are called after
// the pipeline's callbacks at every hook, in the order added, with the same contract
// (yoloflow/callback.h), for the runs that start while the scope lasts.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "yoloflow/callback.h"

namespace yoloflow::core {

struct HostCallback {
  std::string name;  // how errors and checkpoints name it
  std::function<std::unique_ptr<Callback>()> make;  // one callback per training run
};

// The host callbacks of the runs starting now (empty outside a scope).
std::vector<HostCallback> host_callbacks();

class HostCallbackScope {
 public:
  explicit HostCallbackScope(std::vector<HostCallback> callbacks);
  ~HostCallbackScope();
  HostCallbackScope(const HostCallbackScope&) = delete;
  HostCallbackScope& operator=(const HostCallbackScope&) = delete;

 private:
  std::vector<HostCallback> previous_;
};

}  // namespace yoloflow::core
