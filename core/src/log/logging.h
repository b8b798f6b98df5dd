#pragma once
// The host's logger: spdlog behind the SDK's logging facade. Only logging.cpp includes
// spdlog (see yoloflow/log.h for why).
#include <string>

#include "yoloflow/log.h"

namespace yoloflow::core {

// Installs the spdlog sink (stderr, colours when a terminal) at `level`.
void init_logging(LogLevel level);
// Parses "trace|debug|info|warn|error|off"; false if unknown.
bool parse_log_level(const std::string& text, LogLevel& out);
// Also write every message to this file (the run folder's log), until closed.
void add_log_file(const std::string& path);
void close_log_file();

}  // namespace yoloflow::core
