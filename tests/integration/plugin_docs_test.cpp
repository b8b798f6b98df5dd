// docs/plugins/ is generated from the components' schemas (scripts/generate-plugin-docs.sh).
// A parameter added, renamed or re-documented without regenerating the pages fails here, so
// the reference a user reads is the schema the host validates against.
#include <doctest/doctest.h>

#include <filesystem>
#include <set>
#include <sstream>
#include <string>

#include "support/paths.h"
#include "support/run_cli.h"

using namespace yoloflow;
namespace fs = std::filesystem;

TEST_CASE("docs/plugins has one page per built-in component, equal to describe --markdown") {
  const std::string docs = std::string(YOLOFLOW_SOURCE_DIR) + "/docs/plugins";
  const auto listing = test::run_cli("plugins");
  REQUIRE(listing.exit_code == 0);
  std::set<std::string> components;
  std::istringstream lines(listing.output);
  std::string line;
  std::getline(lines, line);  // header
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string name, kind, version, file;
    if (!(fields >> name >> kind >> version >> file)) continue;
    components.insert(name);
    CAPTURE(name);
    const std::string page = docs + "/" + name + ".md";
    REQUIRE_MESSAGE(fs::exists(page), page << " is missing: run scripts/generate-plugin-docs.sh");
    const auto described = test::run_cli("describe " + name + " --kind " + kind + " --markdown");
    REQUIRE(described.exit_code == 0);
    CHECK_MESSAGE(test::read_file(page) == described.output,
                  page << " differs from the schema: run scripts/generate-plugin-docs.sh");
  }
  CHECK(components.size() >= 15);
  CHECK(components.count("train") == 1);
  // No page for a component that no longer exists.
  for (const auto& e : fs::directory_iterator(docs)) {
    const std::string stem = e.path().stem().string();
    if (stem == "README") continue;
    CHECK_MESSAGE(components.count(stem) == 1, e.path().string() << " names no loaded component");
  }
  CHECK(test::read_file(docs + "/README.md").find("[`yolo11`](yolo11.md)") != std::string::npos);
}
