#include "log/logging.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <mutex>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "yoloflow/atomic_file.h"
#include "yoloflow/printable.h"

namespace yoloflow::core {
namespace {

std::mutex g_mutex;
std::shared_ptr<spdlog::logger> g_logger;
std::shared_ptr<spdlog::sinks::basic_file_sink_mt> g_file;

spdlog::level::level_enum to_spdlog(LogLevel level) {
  switch (level) {
    case LogLevel::Trace: return spdlog::level::trace;
    case LogLevel::Debug: return spdlog::level::debug;
    case LogLevel::Info: return spdlog::level::info;
    case LogLevel::Warn: return spdlog::level::warn;
    case LogLevel::Error: return spdlog::level::err;
    default: return spdlog::level::off;
  }
}

// The status line: drawn where stderr is a terminal and info messages are shown.
std::mutex g_status_mutex;
std::string g_status;  // as drawn ("\r" + text + erase to the end of the line), empty when none
bool g_status_allowed = false;

void write_stderr(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}

std::size_t terminal_columns() {
  winsize ws{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1) return ws.ws_col;
  return 80;
}

// The first `columns` - 1 characters (UTF-8 sequences counted once, kept whole).
std::string fit_columns(const std::string& text, std::size_t columns) {
  std::size_t shown = 0, i = 0;
  while (i < text.size() && shown + 1 < columns) {
    std::size_t len = 1;
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0xF0) len = 4;
    else if (c >= 0xE0) len = 3;
    else if (c >= 0xC0) len = 2;
    i += len;
    ++shown;
  }
  return text.substr(0, std::min(i, text.size()));
}

void sink(LogLevel level, const char* message) {
  std::shared_ptr<spdlog::logger> logger;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    logger = g_logger;
  }
  // A status line shown: the message goes above it (cleared, the message, drawn again).
  std::lock_guard<std::mutex> status_lock(g_status_mutex);
  if (!g_status.empty()) write_stderr("\r\x1b[K");
  // Every message, the host's and every plugin's, reaches the terminal and the run's log
  // without a terminal control in it: a class name or file name holding ESC sequences or a
  // carriage return cannot recolour, move or overwrite what is shown (yoloflow/printable.h).
  if (logger) logger->log(to_spdlog(level), printable_lines(message));
  if (!g_status.empty()) write_stderr(g_status);
}

}  // namespace

void init_logging(LogLevel level) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  g_logger = std::make_shared<spdlog::logger>("yoloflow", console);
  g_logger->set_pattern("%^[%H:%M:%S %l]%$ %v");
  g_logger->set_level(to_spdlog(level));
  g_logger->flush_on(spdlog::level::warn);
  if (g_file) g_logger->sinks().push_back(g_file);
  set_log_sink(&sink, level);
  std::lock_guard<std::mutex> status_lock(g_status_mutex);
  g_status_allowed = isatty(STDERR_FILENO) == 1 && level <= LogLevel::Info;
}

bool status_line_shown() {
  std::lock_guard<std::mutex> lock(g_status_mutex);
  return g_status_allowed;
}

void set_status_line(const std::string& text) {
  std::lock_guard<std::mutex> lock(g_status_mutex);
  if (!g_status_allowed) return;
  g_status = "\r" + fit_columns(printable(text), terminal_columns()) + "\x1b[K";
  write_stderr(g_status);
}

void clear_status_line() {
  std::lock_guard<std::mutex> lock(g_status_mutex);
  if (g_status.empty()) return;
  write_stderr("\r\x1b[K");
  g_status.clear();
}

bool parse_log_level(const std::string& text, LogLevel& out) {
  if (text == "trace") out = LogLevel::Trace;
  else if (text == "debug") out = LogLevel::Debug;
  else if (text == "info") out = LogLevel::Info;
  else if (text == "warn" || text == "warning") out = LogLevel::Warn;
  else if (text == "error") out = LogLevel::Error;
  else if (text == "off") out = LogLevel::Off;
  else return false;
  return true;
}

void add_log_file(const std::string& path) {
  check_writable_target(path);  // a log named after a device or a folder is refused, not written into
  std::lock_guard<std::mutex> lock(g_mutex);
  g_file = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, false);
  g_file->set_pattern("[%Y-%m-%d %H:%M:%S.%e %l] %v");
  if (g_logger) g_logger->sinks().push_back(g_file);
}

void close_log_file() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_logger && g_file) {
    auto& sinks = g_logger->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), g_file), sinks.end());
  }
  if (g_file) g_file->flush();
  g_file.reset();
}

}  // namespace yoloflow::core
