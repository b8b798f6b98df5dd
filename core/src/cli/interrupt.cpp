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
char g_again[256] = {0};
char g_kept_file[4096] = {0};  // "" : none
char g_second_without_kept[256] = {0};

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
      (void)!write(STDERR_FILENO, g_again, std::strlen(g_again));
      return;
    }
    // Files are written atomically, so a save cut short leaves the previous one whole.
    const bool kept = g_kept_file[0] == 0 || access(g_kept_file, F_OK) == 0;
    const char* line = kept ? g_second : g_second_without_kept;
    (void)!write(STDERR_FILENO, line, std::strlen(line));
    _exit(kExitInterrupted);
  }
  g_signal.store(sig);
  (void)!write(STDERR_FILENO, g_first, std::strlen(g_first));
}

// The handler, its lines set and the flag cleared before it is installed.
using Handler = void (*)(int);
Handler prepared_handler(const InterruptLines& lines) {
  // A host's process that a second interrupt does not end is not told that it would.
  std::string first = lines.first;
  if (const auto again = first.find(" (interrupt again"); again != std::string::npos && !second_interrupt_ends_process()) {
    first.erase(again);
  }
  copy_line(g_first, sizeof g_first, first);
  copy_line(g_second, sizeof g_second, lines.second);
  copy_line(g_again, sizeof g_again, lines.again);
  copy_line(g_second_without_kept, sizeof g_second_without_kept, lines.second_without_kept);
  // A path that does not fit is not checked: the second line says the file is kept.
  g_kept_file[0] = 0;
  if (lines.kept_file.size() < sizeof g_kept_file) std::memcpy(g_kept_file, lines.kept_file.c_str(), lines.kept_file.size() + 1);
  g_requested.store(false);
  g_signal.store(0);
  return on_interrupt;
}

}  // namespace

InterruptScope::InterruptScope(const InterruptLines& lines) : signals_(prepared_handler(lines), /*once=*/false) {}

InterruptScope::~InterruptScope() = default;

bool InterruptScope::requested() { return g_requested.load(); }

const std::atomic<bool>* InterruptScope::flag() { return &g_requested; }

const char* InterruptScope::signal_name() { return g_signal.load() == SIGTERM ? "SIGTERM" : "SIGINT"; }

}  // namespace yoloflow::cli
