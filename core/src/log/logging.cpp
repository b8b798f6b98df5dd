#include "log/logging.h"

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

void sink(LogLevel level, const char* message) {
  std::shared_ptr<spdlog::logger> logger;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    logger = g_logger;
  }
  // Every message, the host's and every plugin's, reaches the terminal and the run's log
  // without a terminal control in it: a class name or file name holding ESC sequences or a
  // carriage return cannot recolour, move or overwrite what is shown (yoloflow/printable.h).
  if (logger) logger->log(to_spdlog(level), printable_lines(message));
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
