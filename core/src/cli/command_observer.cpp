#include "cli/command_observer.h"

#include <atomic>

namespace yoloflow::cli {
namespace {
// Process-wide: a command's work runs on the flow graph's threads as well as the caller's.
std::atomic<CommandObserver*> g_observer{nullptr};
}  // namespace

CommandObserver* command_observer() { return g_observer.load(); }

CommandObserverScope::CommandObserverScope(CommandObserver* observer) : previous_(g_observer.exchange(observer)) {}
CommandObserverScope::~CommandObserverScope() { g_observer.store(previous_); }

}  // namespace yoloflow::cli
