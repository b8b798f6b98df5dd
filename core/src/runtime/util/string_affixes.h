#pragma once
// Whether a string begins or ends with another (std::string has neither before C++20).
#include <string>
#include <string_view>

namespace yoloflow::core {

inline bool starts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

inline bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace yoloflow::core
