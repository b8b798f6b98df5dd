#pragma once
// What the hostile-input tests check of a command's output and of the disk: the one line is
// there, no library's own words reach the user, and nothing on disk changed.
#include <doctest/doctest.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <map>
#include <string>

#include "support/run_cli.h"

namespace yoloflow::test {

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// How often `part` occurs in `s`, not overlapping.
inline std::size_t count(const std::string& s, const std::string& part) {
  std::size_t n = 0;
  for (auto at = s.find(part); at != std::string::npos; at = s.find(part, at + part.size())) ++n;
  return n;
}

// No library's own words reach the user: iostream, filesystem, yaml-cpp, nlohmann, LibTorch
// (c10 backtraces), OpenCV, std::terminate.
inline void check_no_internals(const std::string& output) {
  for (const char* internal : {"basic_ios", "iostream error", "filesystem error", "bad_alloc", "bad conversion",
                               "Exception raised from", "frame #", "std::", "OpenCV(", "json.exception",
                               "terminate called"}) {
    CHECK_MESSAGE(!contains(output, internal), "'" << internal << "' in: " << output);
  }
}

inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Every file and folder below `dir`, files with their bytes: "nothing changed on disk" (an
// empty folder made and left behind counts too).
inline std::map<std::string, std::string> tree(const std::string& dir) {
  namespace fs = std::filesystem;
  std::map<std::string, std::string> entries;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string name = fs::relative(e.path(), dir).string();
    entries[name] = e.is_regular_file() ? read_file(e.path().string()) : std::string("<folder>");
  }
  return entries;
}

}  // namespace yoloflow::test
