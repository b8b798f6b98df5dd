#include "pipeline/json_text.h"

#include <algorithm>

namespace yoloflow::core {

void line_and_column(const std::string& text, std::size_t byte, std::size_t& line,
                     std::size_t& column) {
  // nlohmann's byte is the 1-based position of the last character read.
  const std::size_t end = std::min(byte == 0 ? 0 : byte - 1, text.size());
  line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  column = end - line_start + 1;
}

bool parse_json_text(const std::string& text, json& out, Diagnostics& diagnostics) {
  try {
    out = json::parse(text, nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/true);
    return true;
  } catch (const json::parse_error& e) {
    std::size_t line = 0, column = 0;
    line_and_column(text, e.byte, line, column);
    // e.what() is "[json.exception.parse_error.101] parse error at line 3, column 5: why";
    // keep only "why", the position is computed above the same way for every version.
    std::string why = e.what();
    const auto at = why.find("parse error");
    if (at != std::string::npos) {
      const auto colon = why.find(": ", at);
      if (colon != std::string::npos) why = why.substr(colon + 2);
    }
    diagnostics.push_back({"", "malformed JSON at line " + std::to_string(line) + ", column " +
                                   std::to_string(column) + ": " + why});
    return false;
  }
}

}  // namespace yoloflow::core
