#include "cli/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "cli/command_observer.h"
#include "yoloflow/error.h"

namespace yoloflow::cli {
namespace {

std::atomic<bool> g_requested{false};
std::atomic<int> g_signal{0};
// Written before the handler is installed, read only by it (write(2) needs no locking).
char g_first[256] = {0};
char g_second[256] = {0};

void copy_line(char* dst, std::size_t size, const std::string& line) {
  const std::string text = "\n" + line + "\n";
  const std::size_t n = std::min(text.size(), size - 1);
  std::memcpy(dst, text.data(), n);
  dst[n] = 0;
}

extern "C" void on_interrupt(int sig) {
  // Async-signal-safe: atomics and write(2) only.
  if (g_requested.exchange(true)) {
    if (!second_interrupt_ends_process()) {  // a host's process goes on (command_observer.h)
      static const char kAgain[] = "\ninterrupt: already stopping after the item in hand\n";
      (void)!write(STDERR_FILENO, kAgain, sizeof kAgain - 1);
      return;
    }
    (void)!write(STDERR_FILENO, g_second, std::strlen(g_second));
    _exit(kExitInterrupted);
  }
  g_signal.store(sig);
  (void)!write(STDERR_FILENO, g_first, std::strlen(g_first));
}

// The handler, its lines set and the flag cleared before it is installed.
using Handler = void (*)(int);
Handler prepared_handler(const std::string& first_line, const std::string& second_line) {
  // A host's process that a second interrupt does not end is not told that it would.
  std::string first = first_line;
  if (const auto again = first.find(" (interrupt again"); again != std::string::npos && !second_interrupt_ends_process()) {
    first.erase(again);
  }
  copy_line(g_first, sizeof g_first, first);
  copy_line(g_second, sizeof g_second, second_line);
  g_requested.store(false);
  return on_interrupt;
}

}  // namespace

InterruptScope::InterruptScope(const std::string& first_line, const std::string& second_line)
    : signals_(prepared_handler(first_line, second_line), /*once=*/false) {}

InterruptScope::~InterruptScope() = default;

bool InterruptScope::requested() { return g_requested.load(); }

const std::atomic<bool>* InterruptScope::flag() { return &g_requested; }

const char* InterruptScope::signal_name() { return g_signal.load() == SIGTERM ? "SIGTERM" : "SIGINT"; }

}  // namespace yoloflow::cli
