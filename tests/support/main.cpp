// Test entry point: doctest's main, with the host's logging quiet unless asked for.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "log/logging.h"
#include "training/builtin_components.h"

int main(int argc, char** argv) {
  yoloflow::core::use_builtin_components();
  yoloflow::LogLevel level = yoloflow::LogLevel::Warn;
  if (const char* env = std::getenv("YOLOFLOW_TEST_LOG")) {
    yoloflow::core::parse_log_level(env, level);
  }
  yoloflow::core::init_logging(level);
  doctest::Context context(argc, argv);
  return context.run();
}
