#include "runtime/pipeline/json_text.h"

#include <algorithm>
#include <set>
#include <vector>

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

namespace {

// Thrown by the parse callback at the first object or list nested deeper than kMaxJsonDepth.
struct TooDeep {};

// Finds keys given twice in one object while the document is parsed (nlohmann keeps the last
// silently), each named by its JSON path, and stops the parse at kMaxJsonDepth. Each level
// keeps only its own last key or index, so memory stays linear in the depth; the full path is
// put together only for a duplicate.
class DuplicateKeys {
 public:
  explicit DuplicateKeys(Diagnostics& diagnostics) : diagnostics_(diagnostics) {}

  bool operator()(int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (frames_.size() >= kMaxJsonDepth) throw TooDeep{};
        frames_.push_back({event == json::parse_event_t::object_start, {}, {}, 0});
        break;
      case json::parse_event_t::key: {
        auto& top = frames_.back();
        top.last_key = parsed.get<std::string>();
        if (!top.keys.insert(top.last_key).second) {
          diagnostics_.push_back({element_path(), "duplicate key '" + top.last_key +
                                                      "': JSON keeps only the last one; remove or rename the other"});
        }
        break;
      }
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        frames_.pop_back();
        next_element();
        break;
      case json::parse_event_t::value:
        next_element();
        break;
    }
    return true;
  }

 private:
  struct Frame {
    bool object;
    std::set<std::string> keys;
    std::string last_key;
    std::size_t index;
  };
  // The path of the element being read: each level's last key, or next index in a list.
  std::string element_path() const {
    std::string path;
    for (const Frame& f : frames_) {
      if (f.object) {
        path += (path.empty() ? "" : ".") + f.last_key;
      } else {
        path += "[" + std::to_string(f.index) + "]";
      }
    }
    return path;
  }
  void next_element() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
  }
  Diagnostics& diagnostics_;
  std::vector<Frame> frames_;
};

// The 1-based line of the first byte at which `text` is nested deeper than kMaxJsonDepth
// (strings skipped), for the message.
std::size_t line_of_depth(const std::string& text) {
  std::size_t depth = 0, line = 1;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (c == '\n') ++line;
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '{' || c == '[') {
      if (++depth > kMaxJsonDepth) return line;
    }
    if ((c == '}' || c == ']') && depth > 0) --depth;
  }
  return line;
}

}  // namespace

bool parse_json_text(const std::string& text, json& out, Diagnostics& diagnostics) {
  try {
    Diagnostics duplicates;
    out = json::parse(text, DuplicateKeys(duplicates), /*allow_exceptions=*/true, /*ignore_comments=*/true);
    diagnostics.insert(diagnostics.end(), duplicates.begin(), duplicates.end());
    return true;
  } catch (const TooDeep&) {
    diagnostics.push_back({"", "malformed JSON at line " + std::to_string(line_of_depth(text)) +
                                   ": objects and lists nested deeper than " + std::to_string(kMaxJsonDepth) +
                                   " levels (a pipeline needs about five)"});
    return false;
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
