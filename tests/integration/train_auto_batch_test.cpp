// Auto batch as a user meets it through `yoloflow validate` and `yoloflow train`: "auto" and a
// fraction of device memory are accepted, anything else is an error naming the JSON path; on
// the CPU a run warns and trains at batch 16 (as Ultralytics does), records 16 in the run's
// pipeline.json, and a resume keeps it without profiling again. (The CUDA profiling needs a GPU:
// docs/training.md says how it was checked there.)
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "support/coco_subset.h"
#include "support/run_cli.h"
#include "support/train_pipeline.h"
#include "runtime/run/results_csv.h"

using namespace yoloflow;

namespace {

std::string pipeline(const std::string& batch, int epochs = 1) {
  test::TrainPipeline p;
  p.name = "autobatch";
  p.epochs = epochs;
  p.batch = batch;
  p.top = R"("ordered": true, "device": "cpu")";
  p.train = R"("cpu_threads": 1, "val_batch": 8, "optimizer": {"plugin": "sgd", "params": {"lr0": 0.01}}, )"
            R"("warmup_epochs": 0, "val_every": 0, "log_every": 1)";
  return p.json();
}

}  // namespace

TEST_CASE("batch \"auto\" and a fraction in (0, 1) validate; other values are errors naming the JSON path") {
  const auto dir = test::temp_dir("auto-batch-validate");
  test::write_coco128_subset(dir, 4);
  auto validate = [&](const std::string& batch) {
    test::write_file(dir + "/p.json", pipeline(batch));
    return test::run_cli("validate " + dir + "/p.json");
  };
  for (const std::string ok : {R"("auto")", "0.7", "32"}) {
    const auto r = validate(ok);
    INFO(ok << ": " << r.output);
    CHECK(r.exit_code == 0);
  }
  const std::string path = "stages.batch.params.batch: ";
  const std::string accepted = "expected int in [1, 65536] or \"auto\" or a fraction in (0, 1)";
  auto r = validate(R"("autoo")");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find(path + accepted + ", got the string \"autoo\"; did you mean \"auto\"?") != std::string::npos);
  for (const std::string bad : {"0", "-1"}) {
    r = validate(bad);
    INFO(bad << ": " << r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find(path + bad + " is out of range: " + accepted) != std::string::npos);
  }
  r = validate("1.5");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find(path + accepted + ", got a float (1.5)") != std::string::npos);
  // A schedule holds numbers of samples: "auto" and fractions are resolved once, before the run.
  r = validate(R"({"steps": {"0": "auto", "5": 0.5}})");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("stages.batch.params.batch.steps.0: expected int in [1, 65536]: a schedule takes plain values (not "
                      "\"auto\" or a fraction)") != std::string::npos);
  CHECK(r.output.find("stages.batch.params.batch.steps.5: expected int in [1, 65536], got a float (0.5)") != std::string::npos);
  test::remove_tree(dir);
}

TEST_CASE("batch \"auto\" on the CPU warns, trains at 16, saves 16 in pipeline.json, and a resume keeps it") {
  const auto dir = test::temp_dir("auto-batch-cpu");
  test::write_coco128_subset(dir, 20);  // batches of 16 and 4
  test::write_file(dir + "/p.json", pipeline(R"("auto")"));
  auto r = test::run_cli("train " + dir + "/p.json --run-dir " + dir + "/run");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("stages.batch.params.batch: batch \"auto\" needs a CUDA device; using 16") != std::string::npos);
  CHECK(r.output.find("epoch 1/1  step 2/2") != std::string::npos);
  const auto saved = nlohmann::json::parse(test::read_file(dir + "/run/pipeline.json"));
  CHECK(saved["stages"]["batch"]["params"]["batch"] == 16);
  core::ResultsCsv results(dir + "/run/results.csv");
  results.load();
  REQUIRE(results.rows().size() == 1);
  CHECK(results.series("batch")[0] == 16);

  // The resume reads the saved 16: nothing to profile, nothing to warn about.
  r = test::run_cli("train --resume " + dir + "/run epochs=2");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("needs a CUDA device") == std::string::npos);
  results.load();
  REQUIRE(results.rows().size() == 2);
  CHECK(results.series("batch")[1] == 16);

  // A fraction says what it asked for.
  test::write_file(dir + "/f.json", pipeline("0.7"));
  r = test::run_cli("train " + dir + "/f.json --run-dir " + dir + "/fraction");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("stages.batch.params.batch: batch 0.7 needs a CUDA device; using 16") != std::string::npos);
  test::remove_tree(dir);
}
