#pragma once
// Reads JSON documents written by people: a syntax error becomes a Diagnostic with the line
// and column, which nlohmann reports only as a byte offset.
#include <string>

#include "yoloflow/params.h"

namespace yoloflow::core {

// The largest pipeline (or sweep) file read, and the deepest nesting of objects and lists in
// one: a pipeline is a few kilobytes and five levels deep, and the limits keep the memory and
// time of reading any file bounded (a megabyte of unclosed '[' is refused at its 65th).
constexpr std::size_t kMaxPipelineBytes = 16u << 20;
constexpr std::size_t kMaxJsonDepth = 64;

// Parses `text`; on a syntax error returns false and appends one diagnostic whose message
// starts with "malformed JSON at line L, column C", as it does for nesting deeper than
// kMaxJsonDepth. `//` and `/* */` comments are allowed. A key given twice in one object
// appends a diagnostic at its JSON path (the document keeps the last).
bool parse_json_text(const std::string& text, json& out, Diagnostics& diagnostics);

// 1-based line and column of the byte at 1-based offset `byte` in `text`.
void line_and_column(const std::string& text, std::size_t byte, std::size_t& line,
                     std::size_t& column);

}  // namespace yoloflow::core
