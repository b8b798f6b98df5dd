#pragma once
// Where tests find shared data, the built CLI and plugins. Environment variables of the
// same name override the build-time defaults (e.g. YOLOFLOW_SHARED_DIR on another machine).
#include <cstdlib>
#include <string>

namespace yoloflow::test {

inline std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return (v && *v) ? std::string(v) : std::string(fallback);
}
inline std::string shared_dir() { return env_or("YOLOFLOW_SHARED_DIR", YOLOFLOW_SHARED_DIR); }
inline std::string coco128_dir() { return shared_dir() + "/datasets/coco128"; }
inline std::string fixtures_dir() { return shared_dir() + "/fixtures"; }
inline std::string build_dir() { return YOLOFLOW_BUILD_DIR; }
inline std::string plugin_dir() { return YOLOFLOW_PLUGIN_DIR; }
inline std::string test_plugin_dir(const std::string& c) {
  return std::string(YOLOFLOW_TEST_PLUGIN_DIR) + "/" + c;
}
inline std::string cli() { return YOLOFLOW_CLI; }
// A Python with PyTorch, to check that Python reads what we write: Debian's python3-torch
// lives in /usr/bin/python3 (a python3 earlier on PATH may lack torch); $YOLOFLOW_PYTHON
// overrides (the GPU machine's is plain `python3`).
inline std::string python() { return env_or("YOLOFLOW_PYTHON", "/usr/bin/python3"); }

}  // namespace yoloflow::test
