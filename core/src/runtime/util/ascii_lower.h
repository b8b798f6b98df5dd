#pragma once
// A word in lower case, ASCII letters only (Ultralytics' words and file extensions are ASCII;
// other bytes pass unchanged, whatever the locale).
#include <algorithm>
#include <cctype>
#include <string>

namespace yoloflow::core {

inline std::string ascii_lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace yoloflow::core
