#pragma once
// Whether a string begins or ends with another (std::string has neither before C++20), and a
// string cut at each occurrence of a character.
#include <string>
#include <string_view>
#include <vector>

namespace yoloflow::core {

inline bool starts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

inline bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The pieces of `s` between the separators, empty ones kept: "a..b" -> {"a", "", "b"}, "" -> {""}.
inline std::vector<std::string> split_at(std::string_view s, char separator) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == separator) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

}  // namespace yoloflow::core
