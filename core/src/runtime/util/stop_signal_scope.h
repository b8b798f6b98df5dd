#pragma once
// SIGINT and SIGTERM routed to one handler for a scope (a run, a sweep), the previous
// handlers restored at its end. Every delivery also raises the SDK's stop request
// (yoloflow/stop_request.h), so a plugin's long phase before the run (listing a dataset,
// scanning labels, filling a cache) ends on the first signal too.
#include <signal.h>

#include <atomic>

#include "yoloflow/stop_request.h"

namespace yoloflow::core {

class StopSignalScope {
 public:
  // `once`: the default action returns after the first delivery (SA_RESETHAND), so a second
  // Ctrl-C stops hard; otherwise every delivery reaches `handler`.
  StopSignalScope(void (*handler)(int), bool once) : previous_(scope_handler().exchange(handler)) {
    clear_stop_request();
    struct sigaction sa {};
    sa.sa_handler = forward;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = once ? SA_RESETHAND : 0;
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~StopSignalScope() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
    scope_handler().store(previous_);
  }
  StopSignalScope(const StopSignalScope&) = delete;
  StopSignalScope& operator=(const StopSignalScope&) = delete;

 private:
  using Handler = void (*)(int);
  static std::atomic<Handler>& scope_handler() {
    static std::atomic<Handler> handler{nullptr};
    return handler;
  }
  // Async-signal-safe: atomics, then the scope's own handler.
  static void forward(int sig) {
    request_stop(sig);
    if (const Handler h = scope_handler().load()) h(sig);
  }

  Handler previous_;
  struct sigaction old_int_ {}, old_term_ {};
};

}  // namespace yoloflow::core
