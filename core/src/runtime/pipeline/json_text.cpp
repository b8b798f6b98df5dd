#include "runtime/pipeline/json_text.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <vector>

#include "yoloflow/error.h"

namespace yoloflow::core {

const char* const kNonFiniteNumber =
    "is a number too large for a double (beyond 1.8e308 in size): give a value in range";

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

bool all_numbers_finite(const json& value, const std::string& path, std::string& where) {
  if (value.is_number_float() && !std::isfinite(value.get<double>())) {
    where = path;
    return false;
  }
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (!all_numbers_finite(*it, path.empty() ? it.key() : path + "." + it.key(), where)) return false;
    }
  } else if (value.is_array()) {
    for (std::size_t i = 0; i < value.size(); ++i) {
      if (!all_numbers_finite(value[i], path + "[" + std::to_string(i) + "]", where)) return false;
    }
  }
  return true;
}

namespace {

// Thrown by the parse callback at the first object or list nested deeper than kMaxJsonDepth.
struct TooDeep {};

// JSON path of an element while a document is read: each level's last key, or index in a list.
struct PathFrame {
  bool object;
  std::string key;
  std::size_t index;
};

std::string path_of(const std::vector<PathFrame>& frames) {
  std::string path;
  for (const PathFrame& f : frames) {
    if (f.object) {
      path += (path.empty() ? "" : ".") + f.key;
    } else {
      path += "[" + std::to_string(f.index) + "]";
    }
  }
  return path;
}

// Watches the document while nlohmann parses it: stops the parse at kMaxJsonDepth (so that
// memory and time stay bounded by the nesting a pipeline may have) and names every number that
// overflowed to infinity by its JSON path. Each level keeps only its last key or index.
class DocumentWatch {
 public:
  // `frames` outlive the parse: where it stopped is the path of the value it could not read.
  DocumentWatch(Diagnostics& diagnostics, std::vector<PathFrame>& frames) : diagnostics_(diagnostics), frames_(frames) {}

  bool operator()(int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (frames_.size() >= kMaxJsonDepth) throw TooDeep{};
        frames_.push_back({event == json::parse_event_t::object_start, {}, 0});
        break;
      case json::parse_event_t::key:
        frames_.back().key = parsed.get<std::string>();
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        frames_.pop_back();
        next_element();
        break;
      case json::parse_event_t::value:
        if (parsed.is_number_float() && !std::isfinite(parsed.get<double>())) {
          diagnostics_.push_back({path_of(frames_), kNonFiniteNumber});
        }
        next_element();
        break;
    }
    return true;
  }

 private:
  void next_element() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
  }
  Diagnostics& diagnostics_;
  std::vector<PathFrame>& frames_;
};

// Keys given twice in one object, each named by its JSON path and the lines of both, found by
// a scan of `text`, which nlohmann has already parsed (so it is valid JSON: no comments, strings
// on one line). At most kShown are listed, then their count: memory and output stay bounded.
void find_duplicate_keys(const std::string& text, Diagnostics& out) {
  constexpr std::size_t kShown = 20;
  struct Frame {
    PathFrame at;
    std::map<std::string, std::size_t> key_lines;  // each key of this object -> its line
  };
  std::vector<Frame> frames;
  std::vector<PathFrame> path;
  std::size_t line = 1, found = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
    } else if (c == '{' || c == '[') {
      frames.push_back({{c == '{', {}, 0}, {}});
    } else if (c == '}' || c == ']') {
      if (!frames.empty()) frames.pop_back();
    } else if (c == ',') {
      if (!frames.empty() && !frames.back().at.object) ++frames.back().at.index;
    } else if (c == '"') {
      const std::size_t start = i;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
      }
      std::size_t next = i + 1;
      while (next < text.size() && std::isspace(static_cast<unsigned char>(text[next]))) ++next;
      if (next >= text.size() || text[next] != ':' || frames.empty() || !frames.back().at.object) continue;
      // The key as JSON means it ("\u0061" is "a").
      std::string key = text.substr(start + 1, i - start - 1);
      if (key.find('\\') != std::string::npos) key = json::parse(text.substr(start, i - start + 1)).get<std::string>();
      Frame& f = frames.back();
      f.at.key = key;
      const auto [first, inserted] = f.key_lines.emplace(key, line);
      if (inserted) continue;
      if (++found > kShown) continue;
      path.clear();
      for (const Frame& fr : frames) path.push_back(fr.at);
      const std::string lines = first->second == line ? "twice on line " + std::to_string(line)
                                                      : "on lines " + std::to_string(first->second) + " and " +
                                                            std::to_string(line);
      out.push_back({path_of(path), "duplicate key '" + key + "', " + lines +
                                        ": JSON would keep only the last one silently; give it once"});
    }
  }
  if (found > kShown) {
    out.push_back({"", std::to_string(found - kShown) + " more keys given twice (the first " + std::to_string(kShown) +
                           " are listed)"});
  }
}

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
  Diagnostics found;
  std::vector<PathFrame> frames;
  json doc;
  try {
    // Comments are not JSON: a `//` line would be refused by every other reader of the file.
    doc = json::parse(text, DocumentWatch(found, frames), /*allow_exceptions=*/true, /*ignore_comments=*/false);
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
    const std::size_t slash = text.find_first_not_of(" \t\r\n", e.byte == 0 ? 0 : e.byte - 1);
    if (slash != std::string::npos && text[slash] == '/') why += " (comments are not JSON; use a \"_doc\" key)";
    diagnostics.push_back({"", "malformed JSON at line " + std::to_string(line) + ", column " +
                                   std::to_string(column) + ": " + why});
    return false;
  } catch (const json::out_of_range& e) {
    // nlohmann refuses a number no double holds while it reads it ("number overflow parsing
    // '1e400'"): named by the path of the value being read, and the number as written.
    const std::string what = e.what();
    const auto open = what.find('\''), close = what.rfind('\'');
    const std::string number = open != std::string::npos && close > open ? what.substr(open + 1, close - open - 1) : "a number";
    diagnostics.push_back({path_of(frames), number + " " + kNonFiniteNumber});
    return false;
  } catch (const json::exception&) {
    // Any other refusal of nlohmann's (none is known for valid UTF-8 text): one line, no code.
    diagnostics.push_back({"", "malformed JSON: the document cannot be read"});
    return false;
  }
  find_duplicate_keys(text, found);
  if (!found.empty()) {
    diagnostics.insert(diagnostics.end(), found.begin(), found.end());
    return false;
  }
  out = std::move(doc);
  return true;
}

json read_json_text(const std::string& text, const std::string& what) {
  json doc;
  Diagnostics problems;
  if (!parse_json_text(text, doc, problems)) {
    const Diagnostic& d = problems.front();
    throw InvalidInput(what + ": " + (d.path.empty() ? "" : d.path + ": ") + d.message);
  }
  return doc;
}

}  // namespace yoloflow::core
