#include "yoloflow/log.h"

#include <atomic>
#include <cstdio>

namespace yoloflow {
namespace {

std::atomic<LogSink> g_sink{nullptr};
std::atomic<int> g_level{static_cast<int>(LogLevel::Info)};

const char* level_tag(LogLevel level) {
  switch (level) {
    case LogLevel::Trace: return "trace";
    case LogLevel::Debug: return "debug";
    case LogLevel::Info: return "info";
    case LogLevel::Warn: return "warning";
    case LogLevel::Error: return "error";
    default: return "";
  }
}

}  // namespace

void set_log_sink(LogSink sink, LogLevel level) {
  g_sink.store(sink);
  g_level.store(static_cast<int>(level));
}

bool log_enabled(LogLevel level) { return static_cast<int>(level) >= g_level.load(); }

void log_message(LogLevel level, const std::string& message) {
  if (!log_enabled(level)) return;
  if (LogSink sink = g_sink.load()) {
    sink(level, message.c_str());
  } else {
    std::fprintf(stderr, "[%s] %s\n", level_tag(level), message.c_str());
  }
}

}  // namespace yoloflow
