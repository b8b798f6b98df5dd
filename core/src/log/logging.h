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

// A status line (a training epoch's progress bar) kept at the bottom of the terminal: shown only
// where stderr is a terminal and the console shows info messages; each message logged meanwhile
// is printed above it and the line drawn again. Never written to the log file. Cut to the
// terminal's width.
bool status_line_shown();  // whether set_status_line draws anything here
void set_status_line(const std::string& text);
void clear_status_line();

}  // namespace yoloflow::core
