// `yoloflow validate` and `yoloflow run` as a user runs them: exit codes, every error listed
// with its path, the run's summary, and SIGINT handling of a running child process.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "support/child_process.h"
#include "support/paths.h"
#include "support/run_cli.h"
#include "support/synthetic_pipeline.h"
#include "yoloflow/error.h"

using namespace yoloflow;
using yoloflow::test::synthetic_pipeline;

namespace {

std::string plugin_arg() { return "--plugin-path " + test::test_plugin_dir("synthetic") + " "; }

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("yoloflow validate lists every error with its path and exits 2") {
  const auto dir = test::temp_dir("cli-validate");
  test::write_file(dir + "/broken.json", R"({
  "epoch": 2,
  "stages": {
    "source": {"plugin": "synthetic_source", "params": {"count": -1}},
    "batch": {"plugin": "synthetic_batchr", "input": "source"},
    "sink": {"plugin": "synthetic_sink", "input": "source"}
  }
})");
  auto r = test::run_cli(plugin_arg() + "validate " + dir + "/broken.json");
  INFO(r.output);
  CHECK(r.exit_code == kExitInvalid);
  const std::string f = dir + "/broken.json: ";
  CHECK(contains(r.output, f + "epoch: unknown parameter 'epoch' of the pipeline; did you mean 'epochs'?"));
  CHECK(contains(r.output, f + "stages.source.params.count: -1 is out of range"));
  CHECK(contains(r.output, f + "stages.batch.plugin: unknown plugin 'synthetic_batchr'; did you mean 'synthetic_batcher'?"));
  CHECK(contains(r.output, f + "stages.sink.input: type mismatch: 'source' (source 'synthetic_source') gives samples but sink 'synthetic_sink' reads batches: put a batcher between them"));
  CHECK(contains(r.output, "4 problems; nothing was run"));

  test::write_file(dir + "/syntax.json", "{\"epochs\": 1,,}");
  auto syntax = test::run_cli(plugin_arg() + "validate " + dir + "/syntax.json");
  CHECK(syntax.exit_code == kExitInvalid);
  CHECK(contains(syntax.output, "malformed JSON at line 1, column 14"));
  yoloflow::test::remove_tree(dir);
}

TEST_CASE("yoloflow validate accepts a good pipeline and prints it resolved") {
  const auto dir = test::temp_dir("cli-validate-ok");
  test::write_file(dir + "/good.json", synthetic_pipeline("", "\"count\": 10"));
  auto r = test::run_cli(plugin_arg() + "validate " + dir + "/good.json");
  INFO(r.output);
  CHECK(r.exit_code == kExitOk);
  CHECK(contains(r.output, "valid pipeline 'good' (source -> mark -> batch -> sink)"));
  auto resolved = test::run_cli(plugin_arg() + "validate " + dir +
                                "/good.json stages.batch.params.batch=5 --print-resolved");
  INFO(resolved.output);
  CHECK(resolved.exit_code == kExitOk);
  const auto doc = json::parse(resolved.output.substr(resolved.output.find('{')));
  CHECK(doc["stages"]["batch"]["params"]["batch"] == 5);
  CHECK(doc["stages"]["sink"]["params"]["delay_ms"] == 0);
  CHECK(doc["workers"] == 0);
  auto bad = test::run_cli(plugin_arg() + "validate " + dir + "/good.json stages.batch.params.bach=5");
  CHECK(bad.exit_code == kExitInvalid);
  CHECK(contains(bad.output, "did you mean 'stages.batch.params.batch'?"));
  yoloflow::test::remove_tree(dir);
}

TEST_CASE("yoloflow run on a synthetic pipeline exits 0 with a summary naming skipped samples") {
  const auto dir = test::temp_dir("cli-run");
  test::write_file(dir + "/run.json", synthetic_pipeline("\"epochs\": 2, \"workers\": 2, \"monitors\": [{\"plugin\": \"synthetic_monitor\"}]",
                                                         "\"count\": 20, \"fail\": [7]", "\"batch\": 4"));
  auto r = test::run_cli(plugin_arg() + "run " + dir + "/run.json");
  INFO(r.output);
  CHECK(r.exit_code == kExitOk);
  CHECK(contains(r.output, "epoch 1/2: 19 images in 5 batches"));
  CHECK(contains(r.output, "epoch 2/2: 19 images in 5 batches"));
  CHECK(contains(r.output, "done: 38 images in "));
  CHECK(contains(r.output, "images/s"));
  CHECK(contains(r.output, "skipped 1 sample that failed to load:\n  sample 7: corrupt image synthetic/7.png"));
  CHECK(contains(r.output, "data issues reported by the source (1):\n  synthetic/7.png: corrupt image -> skipped image"));
  CHECK(contains(r.output, "synthetic_sink: samples=38 batches=10"));
  yoloflow::test::remove_tree(dir);
}

TEST_CASE("yoloflow run reports a failing stage and exits 1") {
  const auto dir = test::temp_dir("cli-run-fail");
  test::write_file(dir + "/fail.json", synthetic_pipeline("", "\"count\": 20", "", "", "\"throw_on\": 4"));
  auto r = test::run_cli(plugin_arg() + "run " + dir + "/fail.json");
  INFO(r.output);
  CHECK(r.exit_code == kExitFailure);
  CHECK(contains(r.output, "error: stage 'mark' (augmentation 'synthetic_mark', "));
  CHECK(contains(r.output, "failed on sample 4 (synthetic/4.png): mark failed on purpose"));
  // preview draws the same samples outside the graph (AugmentedSamples): the same message.
  auto preview = test::run_cli(plugin_arg() + "preview " + dir + "/fail.json --out " + dir + "/preview");
  INFO(preview.output);
  CHECK(preview.exit_code == kExitFailure);
  CHECK(contains(preview.output, "error: stage 'mark' (augmentation 'synthetic_mark', "));
  CHECK(contains(preview.output, "failed on sample 4 (synthetic/4.png): mark failed on purpose"));
  auto invalid = test::run_cli(plugin_arg() + "run " + dir + "/fail.json epochs=0");
  CHECK(invalid.exit_code == kExitInvalid);
  CHECK(contains(invalid.output, "epochs: 0 is out of range"));
  yoloflow::test::remove_tree(dir);
}

TEST_CASE("SIGINT stops a running `yoloflow run` promptly with exit code 130") {
  const auto dir = test::temp_dir("cli-sigint");
  const std::string file = dir + "/slow.json";
  // 100000 samples at 20 ms per batch of 2 would take over 15 minutes.
  test::write_file(file, synthetic_pipeline("\"workers\": 2", "\"count\": 100000", "\"batch\": 2",
                                            "\"delay_ms\": 20"));
  const std::string plugins = test::test_plugin_dir("synthetic");
  test::ChildProcess child({"--plugin-path", plugins, "run", file});
  REQUIRE(child.wait_for_output("running 'slow'", 20000));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto sent = std::chrono::steady_clock::now();
  child.signal(SIGINT);
  const int code = child.wait(10000);
  INFO(child.output());
  CHECK(std::chrono::steady_clock::now() - sent < std::chrono::seconds(5));
  CHECK(code == kExitInterrupted);
  CHECK(contains(child.output(), "(interrupted)"));
  CHECK(contains(child.output(), "interrupted by SIGINT after 0 complete epochs of 1"));
  CHECK(contains(child.output(), "synthetic_sink: samples="));
  yoloflow::test::remove_tree(dir);
}

TEST_CASE("a --run-dir holding a run is refused unless --exist-ok; a failed start leaves no folder") {
  const auto dir = test::temp_dir("cli-run-dir");
  test::write_file(dir + "/p.json", synthetic_pipeline("", "\"count\": 8"));
  const std::string out = dir + "/out";
  auto first = test::run_cli(plugin_arg() + "run " + dir + "/p.json --run-dir " + out);
  INFO(first.output);
  REQUIRE(first.exit_code == kExitOk);
  REQUIRE(std::filesystem::exists(out + "/pipeline.json"));
  const auto written = std::filesystem::last_write_time(out + "/pipeline.json");
  auto again = test::run_cli(plugin_arg() + "run " + dir + "/p.json --run-dir " + out + " epochs=2");
  INFO(again.output);
  CHECK(again.exit_code == kExitInvalid);
  CHECK(contains(again.output, "error: --run-dir " + out + " already holds a run (it has pipeline.json)"));
  CHECK(contains(again.output, "--exist-ok"));
  CHECK(std::filesystem::last_write_time(out + "/pipeline.json") == written);  // untouched
  auto reuse = test::run_cli(plugin_arg() + "run " + dir + "/p.json --run-dir " + out + " --exist-ok epochs=2");
  INFO(reuse.output);
  CHECK(reuse.exit_code == kExitOk);
  // The source fails to configure: nothing ran, and the folder made for the run is gone.
  const std::string failed = dir + "/failed";
  auto bad = test::run_cli(plugin_arg() + "run " + dir + "/p.json --run-dir " + failed +
                           " stages.source.params.missing_data=true");
  INFO(bad.output);
  CHECK(bad.exit_code != kExitOk);
  CHECK(contains(bad.output, "failed to configure"));
  CHECK_FALSE(std::filesystem::exists(failed));
  yoloflow::test::remove_tree(dir);
}

TEST_CASE("an unknown command names the commands that exist; global options may follow the command") {
  auto r = test::run_cli("inspect pipelines/inspect-coco128.json");
  INFO(r.output);
  CHECK(r.exit_code == kExitInvalid);
  CHECK(contains(r.output, "error: unknown command 'inspect'"));
  CHECK(contains(r.output, "the commands are: plugins, describe, validate, run, train"));
  auto typo = test::run_cli("trian x.json");
  CHECK(typo.exit_code == kExitInvalid);
  CHECK(contains(typo.output, "did you mean 'train'?"));
  // --log-level after the command, as people type it.
  auto late = test::run_cli("plugins --log-level warn");
  INFO(late.output);
  CHECK(late.exit_code == kExitOk);
}
