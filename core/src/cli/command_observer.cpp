#include "cli/command_observer.h"

#include <atomic>

namespace yoloflow::cli {
namespace {
// Process-wide: a command's work runs on the flow graph's threads as well as the caller's.
std::atomic<CommandObserver*> g_observer{nullptr};
std::atomic<bool> g_second_ends_process{true};
}  // namespace

CommandObserver* command_observer() { return g_observer.load(); }

bool second_interrupt_ends_process() { return g_second_ends_process.load(); }

CommandObserverScope::CommandObserverScope(CommandObserver* observer) : previous_(g_observer.exchange(observer)) {
  g_second_ends_process.store(observer == nullptr || observer->second_interrupt_ends_process());
}
CommandObserverScope::~CommandObserverScope() {
  g_observer.store(previous_);
  g_second_ends_process.store(previous_ == nullptr || previous_->second_interrupt_ends_process());
}

}  // namespace yoloflow::cli
