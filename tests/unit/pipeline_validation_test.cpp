// Pipeline validation: every error path with its message and JSON path, all reported at once,
// before anything is constructed.
#include <doctest/doctest.h>

#include <filesystem>

#include "runtime/pipeline/json_text.h"
#include "runtime/pipeline/pipeline.h"
#include "runtime/words/pipeline_loading.h"
#include "support/run_cli.h"
#include "support/synthetic_pipeline.h"

using namespace yoloflow;
using yoloflow::test::synthetic_pipeline;
using yoloflow::test::synthetic_plugins;

namespace {

core::LoadedPipeline parse(const std::string& text, const std::vector<std::string>& overrides = {}) {
  return core::parse_pipeline(text, "/data/pipelines", overrides, synthetic_plugins().registry());
}

// True when some diagnostic has exactly this path and contains `text`.
bool has(const core::LoadedPipeline& r, const std::string& path, const std::string& text) {
  for (const auto& d : r.diagnostics) {
    if (d.path == path && d.message.find(text) != std::string::npos) return true;
  }
  return false;
}

std::string all(const core::LoadedPipeline& r) { return core::format_diagnostics(r.diagnostics, "p.json"); }

// A stage object replacing one of the defaults of synthetic_pipeline().
std::string with_stages(const std::string& stages, const std::string& top = "") {
  return "{" + top + (top.empty() ? "" : ",") + "\"stages\": {" + stages + "}}";
}

}  // namespace

TEST_CASE("the synthetic plugin is loaded for these tests") {
  REQUIRE(synthetic_plugins().registry().find(Kind::Source, "synthetic_source") != nullptr);
}

TEST_CASE("a valid pipeline resolves: kinds, chain, defaults filled, comments ignored") {
  auto r = parse(synthetic_pipeline("\"_doc\": \"a comment\", \"epochs\": 2, \"seed\": 5", "\"count\": 10"));
  INFO(all(r));
  REQUIRE(r.ok());
  const auto& p = *r.pipeline;
  CHECK(p.epochs == 2);
  CHECK(p.seed == 5);
  CHECK(p.workers == 0);
  CHECK(p.shuffle);
  CHECK(p.name == "pipeline");
  CHECK(p.source == "source");
  REQUIRE(p.augmentations.size() == 1);
  CHECK(p.augmentations[0] == "mark");
  CHECK(p.batcher == "batch");
  CHECK(p.sink == "sink");
  CHECK(p.stage("batch").kind == Kind::Batcher);
  CHECK(p.document["stages"]["batch"]["kind"] == "batcher");
  CHECK(p.document["stages"]["batch"]["params"]["batch"] == 4);  // default filled in
  CHECK(p.document["stages"]["source"]["params"]["count"] == 10);
  CHECK(p.document["imgsz"] == 640);
  CHECK(p.document["max_in_flight"] == 0);
  CHECK(p.stage_params("batch", 0)["batch"] == 4);
}

TEST_CASE("malformed JSON is reported with its line and column") {
  const std::string text = "{\n  \"epochs\": 1\n  \"stages\": {}\n}\n";
  auto r = parse(text);
  REQUIRE_FALSE(r.ok());
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].path == "");
  // The unexpected token is the string "stages" that starts line 3 at column 3.
  CHECK(r.diagnostics[0].message.find("malformed JSON at line 3, column ") == 0);
  CHECK(r.diagnostics[0].message.find("unexpected string literal") != std::string::npos);

  std::size_t line = 0, column = 0;
  core::line_and_column("ab\ncd\nef", 5, line, column);  // the 'd'
  CHECK(line == 2);
  CHECK(column == 2);
}

TEST_CASE("an unknown plugin gets the closest name") {
  auto r = parse(with_stages(R"("source": {"plugin": "synthetic_sorce"})"));
  CHECK(has(r, "stages.source.plugin", "unknown plugin 'synthetic_sorce'; did you mean 'synthetic_source'?"));
}

TEST_CASE("a plugin of a non-graph kind cannot be a stage") {
  auto r = parse(with_stages(R"("watch": {"plugin": "synthetic_monitor"})"));
  CHECK(has(r, "stages.watch.plugin",
            "'synthetic_monitor' is a monitor plugin, which cannot be a stage"));
  auto k = parse(with_stages(R"("b": {"plugin": "synthetic_batcher", "kind": "sink"})"));
  CHECK(has(k, "stages.b.plugin", "'synthetic_batcher' is a batcher plugin, not a sink plugin"));
  auto bad_kind = parse(with_stages(R"("b": {"plugin": "synthetic_batcher", "kind": "batchr"})"));
  CHECK(has(bad_kind, "stages.b.kind", "'batchr' is not a stage kind"));
  CHECK(has(bad_kind, "stages.b.kind", "did you mean 'batcher'?"));
}

TEST_CASE("unknown parameters, wrong types and out-of-range values name their path") {
  auto unknown = parse(synthetic_pipeline("", "", "\"bach\": 4"));
  CHECK(has(unknown, "stages.batch.params.bach",
            "unknown parameter 'bach' of batcher 'synthetic_batcher'; did you mean 'batch'?"));
  auto type = parse(synthetic_pipeline("", "", "\"batch\": \"four\""));
  CHECK(has(type, "stages.batch.params.batch", "expected int >= 1, got the string \"four\""));
  auto range = parse(synthetic_pipeline("", "", "\"batch\": 0"));
  CHECK(has(range, "stages.batch.params.batch", "0 is out of range: expected int >= 1"));
  auto top = parse(synthetic_pipeline("\"epoch\": 3, \"workers\": -1"));
  CHECK(has(top, "epoch", "unknown parameter 'epoch' of the pipeline; did you mean 'epochs'?"));
  CHECK(has(top, "workers", "-1 is out of range: expected int in [0, 1024]"));
  auto stage_key = parse(with_stages(R"("source": {"plugin": "synthetic_source", "parms": {}})"));
  CHECK(has(stage_key, "stages.source.parms", "unknown key 'parms' of a stage; did you mean 'params'?"));
}

TEST_CASE("missing required values are reported") {
  auto r = parse("{\"epochs\": 1}");
  CHECK(has(r, "stages", "is required by the pipeline"));
  auto plugin = parse(with_stages(R"("source": {"params": {}})"));
  CHECK(has(plugin, "stages.source.plugin", "is required"));
}

TEST_CASE("Component-typed parameters are validated recursively through the registry") {
  auto wrong_kind = parse(synthetic_pipeline("", "", "", R"("monitor": {"plugin": "synthetic_sink"})"));
  CHECK(has(wrong_kind, "stages.sink.params.monitor.plugin",
            "'synthetic_sink' is a sink plugin, not a monitor plugin"));
  auto unknown = parse(synthetic_pipeline("", "", "", R"("monitor": {"plugin": "synthetic_monitr"})"));
  CHECK(has(unknown, "stages.sink.params.monitor.plugin", "did you mean 'synthetic_monitor'?"));
  auto nested_param = parse(
      synthetic_pipeline("", "", "", R"("monitor": {"plugin": "synthetic_monitor", "params": {"x": 1}})"));
  CHECK(has(nested_param, "stages.sink.params.monitor.params.x",
            "unknown parameter 'x' of monitor 'synthetic_monitor'; it takes no parameters"));
  auto missing = parse(synthetic_pipeline("", "", "", R"("monitor": {"params": {}})"));
  CHECK(has(missing, "stages.sink.params.monitor.plugin", "is required"));
  auto ok = parse(synthetic_pipeline("", "", "", R"("monitor": {"plugin": "synthetic_monitor"})"));
  INFO(all(ok));
  CHECK(ok.ok());
}

TEST_CASE("unknown stages in edges get the closest name; ports are not part of the format") {
  auto in_port = parse(with_stages(R"(
    "source": {"plugin": "synthetic_source"},
    "mark": {"plugin": "synthetic_mark", "inputs": {"in": "source"}},
    "batch": {"plugin": "synthetic_batcher", "input": "mark"},
    "sink": {"plugin": "synthetic_sink", "input": "batch.out"})"));
  CHECK(has(in_port, "stages.mark.inputs", "unknown key 'inputs' of a stage"));
  CHECK(has(in_port, "stages.mark.inputs", "did you mean 'input'?"));
  CHECK(has(in_port, "stages.sink.input",
            "\"batch.out\": name the stage alone (\"batch\"); stages have one input and one output, so there are "
            "no ports to name"));
  auto stage = parse(with_stages(R"(
    "source": {"plugin": "synthetic_source"},
    "batch": {"plugin": "synthetic_batcher", "input": "sorce"},
    "sink": {"plugin": "synthetic_sink", "input": "batch"})"));
  CHECK(has(stage, "stages.batch.input", "unknown stage 'sorce'; did you mean 'source'?"));
  auto source_input = parse(with_stages(R"(
    "source": {"plugin": "synthetic_source", "input": "sink"},
    "batch": {"plugin": "synthetic_batcher", "input": "source"},
    "sink": {"plugin": "synthetic_sink", "input": "batch"})"));
  CHECK(has(source_input, "stages.source.input",
            "source 'synthetic_source' reads from no stage: a source starts a pipeline"));
}

TEST_CASE("an unconnected input and an unused output are errors") {
  auto r = parse(with_stages(R"(
    "source": {"plugin": "synthetic_source"},
    "mark": {"plugin": "synthetic_mark"},
    "batch": {"plugin": "synthetic_batcher", "input": "mark"},
    "sink": {"plugin": "synthetic_sink", "input": "batch"})"));
  CHECK(has(r, "stages.mark",
            "augmentation 'synthetic_mark' reads samples but names no stage: add \"input\": \"<stage>\""));
  CHECK(has(r, "stages.source", "the samples of source 'synthetic_source' feed no stage"));
}

TEST_CASE("an output feeding two stages is an error") {
  auto r = parse(with_stages(R"(
    "source": {"plugin": "synthetic_source"},
    "a": {"plugin": "synthetic_mark", "input": "source"},
    "b": {"plugin": "synthetic_mark", "input": "source"},
    "batch": {"plugin": "synthetic_batcher", "input": "a"},
    "sink": {"plugin": "synthetic_sink", "input": "batch"})"));
  CHECK(has(r, "stages.source", "feed several stages ('a', 'b'): each stage feeds exactly one"));
}

TEST_CASE("a cycle is reported with its members") {
  auto r = parse(with_stages(R"(
    "source": {"plugin": "synthetic_source"},
    "m1": {"plugin": "synthetic_mark", "input": "m2"},
    "m2": {"plugin": "synthetic_mark", "input": "m1"},
    "batch": {"plugin": "synthetic_batcher", "input": "source"},
    "sink": {"plugin": "synthetic_sink", "input": "batch"})"));
  CHECK(has(r, "stages", "the stages form a cycle: m1 -> m2 -> m1"));
}

TEST_CASE("a type mismatch names both stages and what flows") {
  auto r = parse(with_stages(R"(
    "source": {"plugin": "synthetic_source"},
    "sink": {"plugin": "synthetic_sink", "input": "source"})"));
  CHECK(has(r, "stages.sink.input",
            "type mismatch: 'source' (source 'synthetic_source') gives samples but sink 'synthetic_sink' reads "
            "batches: put a batcher between them"));
}

TEST_CASE("a valid but non-linear graph is refused by the runner's shape check") {
  auto r = parse(with_stages(R"(
    "s1": {"plugin": "synthetic_source"}, "b1": {"plugin": "synthetic_batcher", "input": "s1"},
    "k1": {"plugin": "synthetic_sink", "input": "b1"},
    "s2": {"plugin": "synthetic_source"}, "b2": {"plugin": "synthetic_batcher", "input": "s2"},
    "k2": {"plugin": "synthetic_sink", "input": "b2"})"));
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(has(r, "stages", "supports linear pipelines only"));
  CHECK(has(r, "stages", "(this pipeline has 2 sources)"));
}

TEST_CASE("several errors are reported at once") {
  auto r = parse(with_stages(R"(
    "source": {"plugin": "synthetic_source", "params": {"count": "many"}},
    "mark": {"plugin": "synthetic_mrk", "input": "source"},
    "batch": {"plugin": "synthetic_batcher", "input": "mark", "params": {"bach": 2}},
    "sink": {"plugin": "synthetic_sink", "input": "batch", "params": {"delay_ms": -5}})",
                             "\"epochs\": 0"));
  INFO(all(r));
  CHECK(has(r, "epochs", "0 is out of range"));
  CHECK(has(r, "stages.source.params.count", "expected int >= 0"));
  CHECK(has(r, "stages.mark.plugin", "did you mean 'synthetic_mark'?"));
  CHECK(has(r, "stages.batch.params.bach", "did you mean 'batch'?"));
  CHECK(has(r, "stages.sink.params.delay_ms", "-5 is out of range"));
  CHECK(r.diagnostics.size() == 5);
}

TEST_CASE("relative Path parameters are resolved against the pipeline's folder; a data.yaml must exist") {
  const auto dir = test::temp_dir("pipeline-paths");
  test::write_file(dir + "/datasets/x/data.yaml", "names: [a]\n");
  std::filesystem::create_directories(dir + "/pipelines");
  auto parse_in = [&](const std::string& text) {
    return core::parse_pipeline(text, dir + "/pipelines", {}, synthetic_plugins().registry());
  };
  auto r = parse_in(synthetic_pipeline("", "\"data\": \"../datasets/x/data.yaml\""));
  INFO(all(r));
  REQUIRE(r.ok());
  CHECK(r.pipeline->stage("source").params["data"] == dir + "/datasets/x/data.yaml");
  auto abs = parse_in(synthetic_pipeline("", "\"data\": \"" + dir + "/datasets/x/data.yaml\""));
  REQUIRE(abs.ok());
  CHECK(abs.pipeline->stage("source").params["data"] == dir + "/datasets/x/data.yaml");
  // The pipeline's one `data` reaches the source; a file that is not there is named with where it was looked for.
  auto shared = parse_in(synthetic_pipeline("\"data\": \"../datasets/x/data.yaml\""));
  REQUIRE(shared.ok());
  CHECK(shared.pipeline->stage("source").params["data"] == dir + "/datasets/x/data.yaml");
  auto missing = parse_in(synthetic_pipeline("", "\"data\": \"../datasets/y/data.yaml\""));
  CHECK(has(missing, "stages.source.params.data", "../datasets/y/data.yaml does not exist"));
}

TEST_CASE("dataset roles: the host finds a stage's dataset and split by the role its schema declares, not the name") {
  // A third party's source whose dataset parameter is `annotations` and whose split is `subset`,
  // beside the synthetic batcher and sink, and a training sink validating through roles.
  core::Registry registry;
  ComponentInfo source;
  source.kind = Kind::Source;
  source.name = "named_source";
  source.schema.add_path("annotations").role(ParamRole::Dataset).doc("data.yaml");
  source.schema.add_enum("subset", {"train", "val"}, "train").role(ParamRole::Split).doc("split");
  source.factory = []() -> Component* { return nullptr; };
  registry.add(source, "named.so", "named", "1.0");
  ComponentInfo sink;
  sink.kind = Kind::Sink;
  sink.name = "validating_sink";
  sink.schema.add_path("labels").role(ParamRole::Dataset).doc("data.yaml");
  sink.schema.add_string("check_split", "val").role(ParamRole::ValidationSplit).doc("split to validate on");
  sink.schema.add_component("checker", "source", nullptr).role(ParamRole::ValidationSource).doc("validation reader");
  sink.factory = []() -> Component* { return nullptr; };
  registry.add(sink, "named.so", "named", "1.0");
  const auto* batcher = synthetic_plugins().registry().find(Kind::Batcher, "synthetic_batcher");
  REQUIRE(batcher != nullptr);
  registry.add(batcher->info, batcher->file, batcher->plugin, batcher->plugin_version);

  const auto dir = test::temp_dir("pipeline-roles");
  test::write_file(dir + "/data.yaml", "names: [a, b]\ntrain: images\nval: images\n");
  std::filesystem::create_directories(dir + "/images");
  const std::string text = R"({"data": "data.yaml", "stages": {
    "source": {"plugin": "named_source"},
    "batch": {"plugin": "synthetic_batcher", "input": "source"},
    "sink": {"plugin": "validating_sink", "input": "batch"}}})";
  auto r = core::parse_pipeline(text, dir, {}, registry);
  INFO(all(r));
  REQUIRE(r.ok());
  const json& stages = r.pipeline->document["stages"];
  CHECK(stages["source"]["params"]["annotations"] == dir + "/data.yaml");
  CHECK(stages["sink"]["params"]["labels"] == dir + "/data.yaml");
  // The validation source: the pipeline's source, its Split set to the sink's ValidationSplit.
  CHECK(stages["sink"]["params"]["checker"]["plugin"] == "named_source");
  CHECK(stages["sink"]["params"]["checker"]["params"]["subset"] == "val");
  // `data=` on the command line reaches every dataset parameter, whatever its name.
  test::write_file(dir + "/other.yaml", "names: [a, b]\ntrain: images\nval: images\n");
  auto o = core::parse_pipeline(text, dir, {"data=" + dir + "/other.yaml"}, registry);
  INFO(all(o));
  REQUIRE(o.ok());
  CHECK(o.pipeline->document["stages"]["source"]["params"]["annotations"] == dir + "/other.yaml");
  // A split the data.yaml lacks is named at the role's own parameter.
  test::write_file(dir + "/train-only.yaml", "names: [a, b]\ntrain: images\n");
  auto t = core::parse_pipeline(R"({"data": "train-only.yaml", "stages": {
    "source": {"plugin": "named_source"},
    "batch": {"plugin": "synthetic_batcher", "input": "source"},
    "sink": {"plugin": "validating_sink", "input": "batch"}}})", dir, {}, registry);
  CHECK(has(t, "stages.sink.params.check_split", "val"));
}

TEST_CASE("load_pipeline reads a file: name from the file, missing file reported") {
  const auto dir = test::temp_dir("pipeline-load");
  test::write_file(dir + "/my-run.json", synthetic_pipeline("", "\"data\": \"d.yaml\""));
  test::write_file(dir + "/d.yaml", "names: [a]\n");
  auto r = core::load_pipeline(dir + "/my-run.json", {}, synthetic_plugins().registry());
  INFO(all(r));
  REQUIRE(r.ok());
  CHECK(r.pipeline->name == "my-run");
  CHECK(r.pipeline->stage("source").params["data"] == dir + "/d.yaml");
  auto missing = core::load_pipeline(dir + "/nope.json", {}, synthetic_plugins().registry());
  REQUIRE(missing.diagnostics.size() == 1);
  CHECK(missing.diagnostics[0].message.find("nope.json' does not exist") != std::string::npos);
  yoloflow::test::remove_tree(dir);
}

TEST_CASE("monitors are validated as monitor components") {
  auto wrong = parse(synthetic_pipeline(R"("monitors": [{"plugin": "synthetic_sink"}, {"plugin": "synthetic_monitor", "parms": {}}])"));
  CHECK(has(wrong, "monitors[0].plugin", "'synthetic_sink' is a sink plugin, not a monitor plugin"));
  CHECK(has(wrong, "monitors[1].parms", "unknown key 'parms' of a component"));
  CHECK(has(wrong, "monitors[1].parms", "did you mean 'params'?"));
  auto not_list = parse(synthetic_pipeline(R"("monitors": {"plugin": "synthetic_monitor"})"));
  CHECK(has(not_list, "monitors", "must be a list"));
  auto ok = parse(synthetic_pipeline(R"("monitors": [{"plugin": "synthetic_monitor"}])"));
  REQUIRE(ok.ok());
  REQUIRE(ok.pipeline->monitors.size() == 1);
  CHECK(ok.pipeline->monitors[0].plugin == "synthetic_monitor");
}

TEST_CASE("a key given twice is an error at its JSON path, also a stage name given twice") {
  // A parameter twice: the document would keep the second silently.
  auto r = parse(synthetic_pipeline("\"epochs\": 2, \"epochs\": 3", "\"count\": 10, \"count\": 12"));
  INFO(all(r));
  CHECK_FALSE(r.ok());
  CHECK(has(r, "epochs", "duplicate key 'epochs'"));
  CHECK(has(r, "stages.source.params.count", "duplicate key 'count'"));
  // A stage twice: the first would vanish from the graph.
  auto s = parse(with_stages(
      "\"source\": {\"plugin\": \"synthetic_source\"},"
      "\"mark\": {\"plugin\": \"synthetic_mark\", \"input\": \"source\"},"
      "\"mark\": {\"plugin\": \"synthetic_mark\", \"input\": \"source\"},"
      "\"batch\": {\"plugin\": \"synthetic_batcher\", \"input\": \"mark\"},"
      "\"sink\": {\"plugin\": \"synthetic_sink\", \"input\": \"batch\"}"));
  INFO(all(s));
  CHECK(has(s, "stages.mark", "duplicate key 'mark'"));
  // Inside an array the element's index is part of the path.
  auto m = parse(synthetic_pipeline("\"monitors\": [{\"plugin\": \"x\", \"plugin\": \"y\"}]"));
  INFO(all(m));
  CHECK(has(m, "monitors[0].plugin", "duplicate key 'plugin'"));
}

TEST_CASE("an imgsz that is not a multiple of the stride is rounded up with a warning") {
  auto r = parse(synthetic_pipeline("\"imgsz\": 100"));
  INFO(all(r));
  REQUIRE(r.ok());
  CHECK(r.pipeline->imgsz(0) == 128);
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.warnings[0].path == "imgsz");
  CHECK(r.warnings[0].message.find("100 is not a multiple of the largest stride 32: using 128") != std::string::npos);
  auto fine = parse(synthetic_pipeline("\"imgsz\": 320"));
  REQUIRE(fine.ok());
  CHECK(fine.warnings.empty());
}

TEST_CASE("a component parameter left out is validated through its default: plugin loaded, parameters fitting") {
  // A registry of the synthetic stages, a scheduler, and a sink whose component defaults are wrong.
  core::Registry registry;
  for (const auto* rc : synthetic_plugins().registry().all()) {
    if (rc->file != "<built-in>") registry.add(rc->info, rc->file, rc->plugin, rc->plugin_version);
  }
  ComponentInfo scheduler;
  scheduler.kind = Kind::Scheduler;
  scheduler.name = "fake_scheduler";
  scheduler.schema.add_float("lrf", 0.01).range(0.0, 1.0);
  scheduler.factory = []() -> Component* { return nullptr; };
  registry.add(scheduler, "fake.so", "fake", "1");
  ComponentInfo sink;
  sink.kind = Kind::Sink;
  sink.name = "nested_sink";
  sink.schema.add_component("missing", "scheduler", {{"plugin", "no_such_scheduler"}});
  sink.schema.add_component("misfit", "scheduler", {{"plugin", "fake_scheduler"}, {"params", {{"lrf", 2.0}}}});
  sink.schema.add_component("fine", "scheduler", {{"plugin", "fake_scheduler"}});
  sink.factory = []() -> Component* { return nullptr; };
  registry.add(sink, "fake.so", "fake", "1");
  const std::string text = R"({"stages": {
    "source": {"plugin": "synthetic_source"},
    "batch": {"plugin": "synthetic_batcher", "input": "source"},
    "sink": {"plugin": "nested_sink", "input": "batch"}}})";
  const auto r = core::parse_pipeline(text, "/data", {}, registry);
  INFO(all(r));
  CHECK_FALSE(r.ok());
  CHECK(has(r, "stages.sink.params.missing.plugin",
            "unknown scheduler plugin 'no_such_scheduler' (`yoloflow plugins` lists the loaded ones) (in the default of "
            "stages.sink.params.missing, which the pipeline leaves out)"));
  CHECK(has(r, "stages.sink.params.misfit.params.lrf",
            "2 is out of range: expected float in [0, 1] (in the default of stages.sink.params.misfit, which the "
            "pipeline leaves out)"));
  CHECK(r.diagnostics.size() == 2);
  // Written in the pipeline, the parameter's own value is what counts.
  const auto given = core::parse_pipeline(R"({"stages": {
    "source": {"plugin": "synthetic_source"},
    "batch": {"plugin": "synthetic_batcher", "input": "source"},
    "sink": {"plugin": "nested_sink", "input": "batch", "params": {"missing": {"plugin": "fake_scheduler"},
                                                                   "misfit": {"plugin": "fake_scheduler"}}}}})",
                                          "/data", {}, registry);
  INFO(all(given));
  CHECK(given.ok());
}
