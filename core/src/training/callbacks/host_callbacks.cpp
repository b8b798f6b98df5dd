#include "training/callbacks/host_callbacks.h"

#include <mutex>

namespace yoloflow::core {
namespace {
// Process-wide: the trainer is built on one of the flow graph's threads.
std::mutex g_mutex;
std::vector<HostCallback> g_callbacks;
}  // namespace

std::vector<HostCallback> host_callbacks() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_callbacks;
}

HostCallbackScope::HostCallbackScope(std::vector<HostCallback> callbacks) {
  std::lock_guard<std::mutex> lock(g_mutex);
  previous_ = std::move(g_callbacks);
  g_callbacks = std::move(callbacks);
}

HostCallbackScope::~HostCallbackScope() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_callbacks = std::move(previous_);
}

}  // namespace yoloflow::core
