#pragma once
// Logging facade for plugins and for host code that includes LibTorch.
//
// Why a facade: spdlog is compiled against one fmt, and LibTorch 2.x ships its own fmt
// headers; a file that includes both fails to compile on the GPU machine. Plugins and
// torch-including host files therefore log ready-made strings through these functions,
// and only one host file talks to spdlog.
#include <sstream>
#include <string>

#include "yoloflow/export.h"

namespace yoloflow {

enum class LogLevel : int { Trace = 0, Debug = 1, Info = 2, Warn = 3, Error = 4, Off = 6 };

YOLOFLOW_SDK_API void log_message(LogLevel level, const std::string& message);
YOLOFLOW_SDK_API bool log_enabled(LogLevel level);

// The host installs the real sink; until then messages go to stderr.
using LogSink = void (*)(LogLevel level, const char* message);
YOLOFLOW_SDK_API void set_log_sink(LogSink sink, LogLevel level);

}  // namespace yoloflow

// Stream-style logging: YF_LOG_INFO("read " << n << " images");
#define YF_LOG_AT(level, expr)                                  \
  do {                                                          \
    if (::yoloflow::log_enabled(level)) {                       \
      std::ostringstream yf_log_stream_;                        \
      yf_log_stream_ << expr;                                   \
      ::yoloflow::log_message(level, yf_log_stream_.str());     \
    }                                                           \
  } while (0)
#define YF_LOG_TRACE(expr) YF_LOG_AT(::yoloflow::LogLevel::Trace, expr)
#define YF_LOG_DEBUG(expr) YF_LOG_AT(::yoloflow::LogLevel::Debug, expr)
#define YF_LOG_INFO(expr) YF_LOG_AT(::yoloflow::LogLevel::Info, expr)
#define YF_LOG_WARN(expr) YF_LOG_AT(::yoloflow::LogLevel::Warn, expr)
#define YF_LOG_ERROR(expr) YF_LOG_AT(::yoloflow::LogLevel::Error, expr)
