// Command-line overrides: applied before validation, paths checked against the pipeline and
// the schemas at that place.
#include <doctest/doctest.h>

#include "runtime/pipeline/pipeline.h"
#include "runtime/words/pipeline_loading.h"
#include "support/synthetic_pipeline.h"

using namespace yoloflow;
using yoloflow::test::synthetic_pipeline;
using yoloflow::test::synthetic_plugins;

namespace {

core::LoadedPipeline parse(const std::vector<std::string>& overrides, const std::string& text = "") {
  return core::parse_pipeline(text.empty() ? synthetic_pipeline("\"epochs\": 1") : text, "/p",
                              overrides, synthetic_plugins().registry());
}

bool has(const core::LoadedPipeline& r, const std::string& path, const std::string& text) {
  for (const auto& d : r.diagnostics) {
    if (d.path == path && d.message.find(text) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("overrides set existing values, schema parameters absent from the file, and strings") {
  auto r = parse({"epochs=3", "stages.batch.params.batch=8", "stages.source.params.count=5",
                  "name=coco-run", "ordered=true", "stages.mark.params.strength=0.5"});
  INFO(core::format_diagnostics(r.diagnostics, ""));
  REQUIRE(r.ok());
  const auto& p = *r.pipeline;
  CHECK(p.epochs == 3);
  CHECK(p.name == "coco-run");
  CHECK(p.ordered);
  CHECK(p.stage_params("batch", 0)["batch"] == 8);
  CHECK(p.stage_params("source", 0)["count"] == 5);
  CHECK(p.stage_params("mark", 0)["strength"].get<double>() == doctest::Approx(0.5));
}

TEST_CASE("an override may add params to a stage that has none, and a schedule") {
  const std::string text = R"({"stages": {
    "source": {"plugin": "synthetic_source"},
    "batch": {"plugin": "synthetic_batcher", "input": "source"},
    "sink": {"plugin": "synthetic_sink", "input": "batch"}}})";
  auto r = parse({"stages.batch.params.batch=2", R"(imgsz={"linear": {"0": 320, "4": 640}})",
                  "epochs=5"},
                 text);
  INFO(core::format_diagnostics(r.diagnostics, ""));
  REQUIRE(r.ok());
  CHECK(r.pipeline->stage_params("batch", 0)["batch"] == 2);
  CHECK(r.pipeline->imgsz(0) == 320);
  CHECK(r.pipeline->imgsz(2) == 480);
  CHECK(r.pipeline->imgsz(4) == 640);
}

TEST_CASE("an override of an unknown path is an error with the closest name") {
  auto param = parse({"stages.batch.params.bach=8"});
  CHECK(has(param, "stages.batch.params.bach",
            "'stages.batch.params.bach' is not a parameter of batcher 'synthetic_batcher'; "
            "did you mean 'stages.batch.params.batch'?"));
  auto top = parse({"epoch=3"});
  CHECK(has(top, "epoch", "cannot override: 'epoch' is not a pipeline setting; did you mean 'epochs'?"));
  auto stage = parse({"stages.btch.params.batch=8"});
  CHECK(has(stage, "stages.btch.params.batch", "'stages.btch' is not a stage of this pipeline; did you mean 'stages.batch'?"));
  auto malformed = parse({"epochs"});
  CHECK(has(malformed, "epochs", "an override looks like path=value"));
  auto into_value = parse({"epochs.x=1"});
  CHECK(has(into_value, "epochs.x", "'epochs' holds 1, not an object with 'x'"));
  // A stage's name or a stage parameter's short name used as a path: where it lives.
  auto stage_path = parse({"sink.delay_ms=3"});
  CHECK(has(stage_path, "sink.delay_ms", "did you mean 'stages.sink.params.delay_ms'?"));
  auto component_path = parse({"monitor.x=3"});
  CHECK(has(component_path, "monitor.x", "did you mean 'stages.sink.params.monitor.params.x'?"));
}

TEST_CASE("an overridden value is validated like the file") {
  auto r = parse({"stages.batch.params.batch=zero", "workers=-2"});
  CHECK(has(r, "stages.batch.params.batch", "expected int >= 1, got the string \"zero\""));
  CHECK(has(r, "workers", "-2 is out of range"));
  CHECK(r.diagnostics.size() == 2);
}
