#pragma once
// SIGINT and SIGTERM routed to one handler for a scope (a run, a sweep), the previous
// handlers restored at its end.
#include <signal.h>

namespace yoloflow::core {

class StopSignalScope {
 public:
  // `once`: the default action returns after the first delivery (SA_RESETHAND), so a second
  // Ctrl-C stops hard; otherwise every delivery reaches `handler`.
  StopSignalScope(void (*handler)(int), bool once) {
    struct sigaction sa {};
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = once ? SA_RESETHAND : 0;
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~StopSignalScope() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignalScope(const StopSignalScope&) = delete;
  StopSignalScope& operator=(const StopSignalScope&) = delete;

 private:
  struct sigaction old_int_ {}, old_term_ {};
};

}  // namespace yoloflow::core
