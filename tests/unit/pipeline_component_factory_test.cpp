// Creating configured components from specs, as the graph runner and a built-in sink do:
// errors name the JSON path, the component and its library, and keep a plugin's exit code.
#include <doctest/doctest.h>

#include "runtime/pipeline/component_factory.h"
#include "support/synthetic_pipeline.h"
#include "yoloflow/error.h"
#include "yoloflow/monitor.h"
#include "yoloflow/source.h"

using namespace yoloflow;
using yoloflow::test::synthetic_plugins;

TEST_CASE("create_component builds and configures a component from its spec") {
  StageContext ctx;
  auto source = core::create_component<DataSource>(
      synthetic_plugins().registry(), Kind::Source,
      {{"plugin", "synthetic_source"}, {"params", {{"count", 5}}}}, "stages.train.params.data", ctx);
  REQUIRE(source);
  CHECK(source->size() == 5);  // configured with the given value
  CHECK(source->load(2).path == "synthetic/2.png");
  auto monitor = core::create_component<Monitor>(synthetic_plugins().registry(), Kind::Monitor,
                                                 {{"plugin", "synthetic_monitor"}}, "monitors[0]", ctx);
  CHECK(monitor != nullptr);
}

TEST_CASE("create_component refuses a plugin of another kind and invalid parameters") {
  StageContext ctx;
  try {
    core::create_component<Monitor>(synthetic_plugins().registry(), Kind::Monitor,
                                    {{"plugin", "synthetic_sink"}}, "stages.train.params.monitor", ctx);
    FAIL("expected an error");
  } catch (const InvalidInput& e) {
    CHECK(std::string(e.what()) ==
          "stages.train.params.monitor: 'synthetic_sink' is a sink plugin, not a monitor plugin");
  }
  try {
    core::create_component<DataSource>(synthetic_plugins().registry(), Kind::Source,
                                       {{"plugin", "synthetic_source"}, {"params", {{"cont", 5}}}},
                                       "x", ctx);
    FAIL("expected an error");
  } catch (const InvalidInput& e) {
    CHECK(std::string(e.what()).find("x.params.cont: unknown parameter 'cont' of source "
                                     "'synthetic_source'; did you mean 'count'?") != std::string::npos);
  }
}

TEST_CASE("an exception from configure() names the path, component and library, keeping exit code 2") {
  StageContext ctx;
  try {
    core::create_component<DataSource>(
        synthetic_plugins().registry(), Kind::Source,
        {{"plugin", "synthetic_source"}, {"params", {{"missing_data", true}, {"data", "/d/x.yaml"}}}},
        "stages.source", ctx);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "stages.source (source 'synthetic_source', " + test::synthetic_plugin() +
                                       ") failed to configure: data file /d/x.yaml does not exist");
    CHECK(e.exit_code() == kExitInvalid);
  }
}
