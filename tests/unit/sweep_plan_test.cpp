// Sweep files: grid expansion, run names and folders, overrides, and the errors a user gets
// for a malformed sweep. Plus the summary built from run folders.
#include <doctest/doctest.h>

#include <filesystem>

#include "support/paths.h"
#include "support/run_cli.h"
#include "runtime/sweep/slurm_script.h"
#include "runtime/sweep/sweep_plan.h"
#include "runtime/sweep/sweep_summary.h"
#include "yoloflow/error.h"

using namespace yoloflow;
using nlohmann::json;

namespace {

core::SweepPlan plan_of(const std::string& text) {
  return core::make_sweep_plan(json::parse(text), "/s/sweep.json", "/s");
}

std::string error_of(const std::string& text) {
  try {
    plan_of(text);
  } catch (const InvalidInput& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("sweep grid: cartesian product, last key fastest, short stable names, explicit runs appended") {
  const auto plan = plan_of(R"({
    "name": "scales", "base": "train.json",
    "grid": {"stages.train.params.model.params.scale": ["n", "s"],
             "stages.train.params.precision.plugin": ["fp32", "amp_bf16"]},
    "runs": [{"name": "lowlr", "overrides": {"stages.train.params.optimizer.params.lr0": 0.001}}],
    "overrides": {"epochs": 3}})");
  CHECK(plan.name == "scales");
  CHECK(plan.base == "/s/train.json");
  REQUIRE(plan.runs.size() == 5);
  // Keys in alphabetical order: model.params.scale < precision.plugin.
  CHECK(plan.runs[0].name == "scale=n,precision.plugin=fp32");
  CHECK(plan.runs[1].name == "scale=n,precision.plugin=amp_bf16");
  CHECK(plan.runs[2].name == "scale=s,precision.plugin=fp32");
  CHECK(plan.runs[3].name == "scale=s,precision.plugin=amp_bf16");
  CHECK(plan.runs[4].name == "lowlr");
  CHECK(plan.runs[0].folder == "scale=n,precision.plugin=fp32");
  // Plugin switches go first, so the new plugin's parameters validate.
  CHECK(plan.runs[3].overrides == std::vector<std::string>{"stages.train.params.precision.plugin=amp_bf16", "epochs=3",
                                                           "stages.train.params.model.params.scale=s"});
  CHECK(plan.runs[4].overrides == std::vector<std::string>{"epochs=3", "stages.train.params.optimizer.params.lr0=0.001"});
}

TEST_CASE("sweep runs without a grid; unnamed runs are named after their overrides; name defaults to the file") {
  const auto plan = plan_of(R"({"base": "/abs/p.json", "_doc": "x",
    "runs": [{"overrides": {"stages.batch.params.batch": 8, "imgsz": 320}}, {"name": "b", "_doc": "y"}]})");
  CHECK(plan.name == "sweep");
  CHECK(plan.base == "/abs/p.json");
  REQUIRE(plan.runs.size() == 2);
  CHECK(plan.runs[0].name == "imgsz=320,batch=8");  // keys in alphabetical order
  CHECK(plan.runs[1].name == "b");
  CHECK(plan.runs[1].overrides.empty());
}

TEST_CASE("sweep override values keep their JSON type on the command line") {
  CHECK(core::override_argument("a", json("n")) == "a=n");
  CHECK(core::override_argument("a", json("3")) == "a=\"3\"");  // the string "3", not a number
  CHECK(core::override_argument("a", json("true")) == "a=\"true\"");
  CHECK(core::override_argument("a", json(0.5)) == "a=0.5");
  CHECK(core::override_argument("a", json(false)) == "a=false");
  CHECK(core::override_argument("a", json::parse(R"({"steps": {"0": 1}})")) == R"(a={"steps":{"0":1}})");
}

TEST_CASE("sweep short labels tell keys apart and never stop at a bare plugin") {
  CHECK(core::short_labels({"stages.train.params.lr0"}) == std::vector<std::string>{"lr0"});
  CHECK(core::short_labels({"stages.train.params.precision.plugin"}) == std::vector<std::string>{"precision.plugin"});
  CHECK(core::short_labels({"stages.a.params.p", "stages.b.params.p"}) == std::vector<std::string>{"a.p", "b.p"});
  CHECK(core::short_labels({"epochs", "imgsz"}) == std::vector<std::string>{"epochs", "imgsz"});
}

TEST_CASE("sweep folder names are filesystem-safe, distinct and bounded") {
  CHECK(core::folder_name("lowlr") == "lowlr");
  CHECK(core::folder_name("scale=n,lr0=0.01") == "scale=n,lr0=0.01");
  const auto a = core::folder_name("a/b c");
  const auto b = core::folder_name("a b/c");
  CHECK(a.rfind("a_b_c-", 0) == 0);
  CHECK(a != b);
  CHECK(core::folder_name("..").find('/') == std::string::npos);
  CHECK(core::folder_name("..") != "..");
  CHECK(core::folder_name("-x").front() != '-');
  const auto longer = core::folder_name(std::string(300, 'x'));
  CHECK(longer.size() == 100);
  CHECK(longer != core::folder_name(std::string(301, 'x')));
  const auto plan = plan_of(R"({"base": "p.json", "grid": {"imgsz": [{"steps": {"0": 320, "2": 640}}, 640]}})");
  for (const auto& r : plan.runs) CHECK(r.folder.find_first_of("/{}\" :") == std::string::npos);
}

TEST_CASE("sweep file errors name the JSON path") {
  CHECK(error_of(R"({"grid": {"epochs": [1]}})").find("base: missing") != std::string::npos);
  CHECK(error_of(R"({"base": "p.json"})").find("no runs") != std::string::npos);
  CHECK(error_of(R"({"base": "p.json", "grid": {"epochs": []}})").find("grid.epochs: must be a non-empty array") !=
        std::string::npos);
  CHECK(error_of(R"({"base": "p.json", "gird": {}})").find("gird: unknown key") != std::string::npos);
  CHECK(error_of(R"({"base": "p.json", "runs": [{"name": "a"}, {"name": "a"}]})").find("runs[1]: a second run named 'a'") !=
        std::string::npos);
  CHECK(error_of(R"({"base": "p.json", "runs": [{"name": "a", "overides": {}}]})").find("runs[0].overides: unknown key") !=
        std::string::npos);
  CHECK(error_of(R"({"base": "p.json", "name": "a/b", "runs": [{"name": "a"}]})").find("name: 'a/b' must be a folder name") !=
        std::string::npos);
  CHECK(error_of(R"({"base": "p.json", "runs": [{}]})").find("runs[0]: needs a \"name\"") != std::string::npos);
  CHECK(error_of(R"({"base": "p.json", "overrides": {"a=b": 1}, "runs": [{"name": "x"}]})").find("overrides.a=b") !=
        std::string::npos);
}

TEST_CASE("sweep file: comments are malformed JSON, a missing file") {
  const auto dir = test::temp_dir("sweep-plan-file");
  test::write_file(dir + "/c.json", "{\n // a comment\n \"base\": \"sub/p.json\", \"runs\": [{\"name\": \"a\"}]}\n");
  CHECK_THROWS_WITH_AS(core::load_sweep_plan(dir + "/c.json"), doctest::Contains("malformed JSON at line 2, column 2"),
                       InvalidInput);
  test::write_file(dir + "/s.json", "{\n \"_doc\": \"a comment\",\n \"base\": \"sub/p.json\", \"runs\": [{\"name\": \"a\"}]}\n");
  const auto plan = core::load_sweep_plan(dir + "/s.json");
  CHECK(plan.name == "s");
  CHECK(plan.base == dir + "/sub/p.json");
  CHECK_THROWS_WITH_AS(core::load_sweep_plan(dir + "/none.json"), doctest::Contains("none.json' does not exist"),
                       InvalidInput);
  test::write_file(dir + "/bad.json", "{\"base\": \n");
  CHECK_THROWS_WITH_AS(core::load_sweep_plan(dir + "/bad.json"), doctest::Contains("malformed JSON at line"),
                       InvalidInput);
  test::remove_tree(dir);
}

TEST_CASE("sweep summary sorts by fitness of the last validated epoch and fills columns from results.csv") {
  // The fitness is the trainer's column (the evaluator's number), the metrics the evaluator's
  // metrics/ columns, whichever they are.
  const auto dir = test::temp_dir("sweep-summary");
  const auto plan = plan_of(R"({"name": "t", "base": "p.json", "runs": [{"name": "a"}, {"name": "b"}, {"name": "c"}]})");
  const std::string header =
      "epoch,time,train/box_loss,train/cls_loss,train/dfl_loss,metrics/precision(B),metrics/recall(B),"
      "metrics/mAP50(B),metrics/mAP50-95(B),val/box_loss,val/cls_loss,val/dfl_loss,lr/pg0,lr/pg1,lr/pg2,"
      "gpu_mem_GiB,images_per_second,fitness\n";
  // a: 2 epochs, validated only at the end; b: better mAP; c: never started.
  test::write_file(dir + "/a/results.csv", header + "1,10,1,1,1,,,,,,,,0.1,0.1,0.1,1.5,20,\n"
                                                     "2,21,1,1,1,0.5,0.5,0.2,0.1,1,1,1,0.1,0.1,0.1,2.5,30,0.15\n");
  test::write_file(dir + "/a/pipeline.json", R"({"epochs": 2})");
  test::write_file(dir + "/b/results.csv", header + "1,5,1,1,1,0.5,0.5,0.5,0.3,1,1,1,0.1,0.1,0.1,,40,0.3\n");
  test::write_file(dir + "/b/pipeline.json", R"({"epochs": 1})");
  const auto rows = core::write_summary(plan, dir);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].run == "b");
  CHECK(rows[1].run == "a");
  CHECK(rows[2].run == "c");
  CHECK(rows[0].status == "done");
  CHECK(rows[2].status == "pending");
  CHECK(*rows[0].fitness == doctest::Approx(0.3));
  CHECK(*rows[1].fitness == doctest::Approx(0.15));
  REQUIRE(rows[1].metrics.size() == 4);
  CHECK(rows[1].metrics[3].first == "mAP50-95(B)");
  CHECK(rows[1].metrics[3].second == doctest::Approx(0.1));
  CHECK(*rows[1].img_s == doctest::Approx(25));
  CHECK(*rows[1].peak_gpu_mem_gib == doctest::Approx(2.5));
  CHECK(*rows[1].time_s == doctest::Approx(21));
  CHECK(rows[1].epochs == "2/2");
  CHECK_FALSE(rows[0].peak_gpu_mem_gib.has_value());
  const auto csv = test::read_file(dir + "/summary.csv");
  CHECK(csv.rfind("run,status,epochs,time_s,img_s,peak_gpu_mem_GiB,precision(B),recall(B),mAP50(B),mAP50-95(B),fitness,"
                  "reason,dir,overrides\n",
                  0) == 0);
  CHECK(csv.find("\nb,done,1/1,5.0,40.0,,0.5000,0.5000,0.5000,0.3000,0.3000,") != std::string::npos);
  CHECK(test::read_file(dir + "/summary.md").find("| b | done | 1/1 |") != std::string::npos);
  test::remove_tree(dir);
}

TEST_CASE("sweep Slurm script: one array task per run, each with its overrides, shell-quoted") {
  const auto plan = plan_of(R"({"name": "t", "base": "/p/base.json",
    "grid": {"stages.train.params.lr0": [0.01, 0.001]}, "runs": [{"name": "it's", "overrides": {"name": "a b"}}]})");
  core::SlurmOptions so;
  so.exe = "/opt/yoloflow";
  so.out_dir = "/runs/t";
  so.sweep_file = "/s/sweep.json";
  const auto script = core::slurm_array_script(plan, so);
  CHECK(script.find("#SBATCH --array=0-2\n") != std::string::npos);
  CHECK(script.find("'stages.train.params.lr0=0.01'") != std::string::npos);
  CHECK(script.find("'stages.train.params.lr0=0.001'") != std::string::npos);
  CHECK(script.find("'name=a b'") != std::string::npos);
  CHECK(script.find("--summary-only") != std::string::npos);
  CHECK(core::shell_quote("it's") == "'it'\\''s'");
}
