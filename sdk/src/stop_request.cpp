#include "yoloflow/stop_request.h"

#include <signal.h>

#include <atomic>

#include "yoloflow/error.h"

namespace yoloflow {
namespace {

// The signal that asked for the stop; 0 while none did.
std::atomic<int> g_stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "request_stop must be async-signal-safe");

}  // namespace

void request_stop(int signal) noexcept { g_stop_signal.store(signal == 0 ? SIGINT : signal); }

void clear_stop_request() noexcept { g_stop_signal.store(0); }

bool stop_requested() noexcept { return g_stop_signal.load() != 0; }

void throw_if_stop_requested(const std::string& doing) {
  const int sig = g_stop_signal.load();
  if (sig == 0) return;
  throw Error(std::string("interrupted by ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT") + " while " + doing +
                  "; nothing was run",
              kExitInterrupted);
}

}  // namespace yoloflow
