// docs/cli.md is generated from the CLI's own help (scripts/generate-cli-docs.sh). An option
// added, renamed or re-documented without regenerating the page fails here, so the reference a
// user reads is the help the CLI prints.
#include <doctest/doctest.h>

#include <string>

#include "support/paths.h"
#include "support/run_cli.h"

using namespace yoloflow;

TEST_CASE("docs/cli.md is the CLI's help for every command, as generated") {
  const std::string page = std::string(YOLOFLOW_SOURCE_DIR) + "/docs/cli.md";
  const auto dir = test::temp_dir("cli-docs");
  const auto generated = test::run_shell(std::string(YOLOFLOW_SOURCE_DIR) + "/scripts/generate-cli-docs.sh " +
                                         test::cli() + " " + dir + "/cli.md");
  INFO(generated.output);
  REQUIRE(generated.exit_code == 0);
  const std::string expected = test::read_file(dir + "/cli.md");
  // Every command has its section, with its usage line as a user types it.
  for (const char* command : {"train", "val", "predict", "sweep", "describe", "weights import"}) {
    CAPTURE(command);
    CHECK(expected.find("\nUsage: yoloflow " + std::string(command) + " ") != std::string::npos);
  }
#ifndef YOLOFLOW_WITH_ONNX
  // The page documents `yoloflow export`, which a build without ONNX has not.
  MESSAGE("built without ONNX export: docs/cli.md not compared");
  test::remove_tree(dir);
  return;
#endif
  CHECK_MESSAGE(test::read_file(page) == expected, page << " differs from the CLI's help: run scripts/generate-cli-docs.sh");
  test::remove_tree(dir);
}
