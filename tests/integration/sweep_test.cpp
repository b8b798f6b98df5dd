// `yoloflow sweep`, checked as a user runs it: a real sweep of tiny CPU trainings (4 coco128
// images, imgsz 64, 1-2 epochs) with one invalid run, the summary it writes, a rerun that
// trains nothing again, a SIGINT mid-training that a rerun resumes, the Slurm script and the
// dry run.
#include <doctest/doctest.h>

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/child_process.h"
#include "support/coco_subset.h"
#include "support/paths.h"
#include "support/run_cli.h"
#include "support/train_pipeline.h"

using namespace yoloflow;
namespace fs = std::filesystem;

namespace {

std::string base_pipeline() {
  test::TrainPipeline p;
  p.seed = 3;
  p.top = R"("ordered": true, "workers": 1, "device": "cpu")";
  p.train = R"("optimizer": {"plugin": "sgd", "params": {"lr0": 0.01}}, "warmup_epochs": 0, "val_every": 0, "log_every": 1)";
  return p.json();
}

// A CSV file as rows of cells (quoted cells may hold commas).
std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(test::read_file(path));
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cells(1);
    bool quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') cells.back() += '"', ++i;
      else if (c == '"') quoted = !quoted;
      else if (c == ',' && !quoted) cells.emplace_back();
      else cells.back() += c;
    }
    rows.push_back(cells);
  }
  return rows;
}

std::string cell(const std::vector<std::vector<std::string>>& csv, std::size_t row, const std::string& column) {
  for (std::size_t i = 0; i < csv[0].size(); ++i) {
    if (csv[0][i] == column) return csv[row][i];
  }
  FAIL("no column " << column);
  return "";
}

bool wait_for_file_text(const std::string& path, const std::string& text, int timeout_ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < end) {
    if (fs::exists(path) && test::read_file(path).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

std::string setup(const std::string& tag) {
  const auto dir = test::temp_dir(tag);
  test::write_coco128_subset(dir, 4);
  test::write_file(dir + "/base.json", base_pipeline());
  return dir;
}

}  // namespace

TEST_CASE("sweep trains every valid run, records the invalid one, writes a sorted summary; a rerun trains nothing") {
  const auto dir = setup("sweep-grid");
  test::write_file(dir + "/sweep.json", R"({
    "_doc": "two learning rates, and a run whose override the train sink does not know",
    "name": "lr", "base": "base.json",
    "grid": {"stages.train.params.optimizer.params.lr0": [0.01, 0.02]},
    "runs": [{"name": "broken", "overrides": {"stages.train.params.no_such_param": 1}},
             {"name": "nodata", "overrides": {"stages.source.params.data": "nodata.yaml"}}]
  })");
  // Valid, but the images its list names are missing: the child fails when it starts reading.
  // coco's 80 classes and a list that exists, so the pipeline is valid; the run fails when the
  // source opens the split.
  std::string names;
  for (int c = 0; c < 80; ++c) names += "  " + std::to_string(c) + ": class" + std::to_string(c) + "\n";
  test::write_file(dir + "/nodata.yaml", "path: .\ntrain: gone.txt\nval: gone.txt\nnames:\n" + names);
  test::write_file(dir + "/gone.txt", "./images/missing.jpg\n");
  const std::string out = dir + "/out";
  const std::string cmd = "sweep " + dir + "/sweep.json --out " + out + " --jobs 2";
  auto r = test::run_cli(cmd);
  INFO(r.output);
  CHECK(r.exit_code == 1);  // a failed run makes the sweep fail, after the others finished
  CHECK(r.output.find("broken: invalid, not run") != std::string::npos);
  CHECK(r.output.find("no_such_param") != std::string::npos);
  CHECK(r.output.find("nodata: failed") != std::string::npos);
  CHECK(r.output.find("2 done, 2 failed") != std::string::npos);

  const auto csv = read_csv(out + "/summary.csv");
  REQUIRE(csv.size() == 5);
  CHECK(csv[0][0] == "run");
  // Finished runs first, by fitness; the failed one last with its reason.
  for (std::size_t i : {1, 2}) {
    CHECK(cell(csv, i, "status") == "done");
    CHECK(cell(csv, i, "epochs") == "1/1");
    CHECK_FALSE(cell(csv, i, "mAP50(B)").empty());
    CHECK_FALSE(cell(csv, i, "mAP50-95(B)").empty());
    CHECK(std::stod(cell(csv, i, "img_s")) > 0);
    CHECK(cell(csv, i, "peak_gpu_mem_GiB").empty());  // CPU
    CHECK(fs::exists(cell(csv, i, "dir") + "/weights/last.pt"));
  }
  CHECK(std::stod(cell(csv, 1, "fitness")) >= std::stod(cell(csv, 2, "fitness")));
  const double f = std::stod(cell(csv, 1, "mAP50-95(B)"));  // fitness: mAP50-95, as Ultralytics 8.4
  CHECK(std::stod(cell(csv, 1, "fitness")) == doctest::Approx(f).epsilon(1e-3));
  CHECK(cell(csv, 3, "run") == "broken");
  CHECK(cell(csv, 3, "status") == "failed");
  CHECK(cell(csv, 3, "reason").find("invalid pipeline") != std::string::npos);
  CHECK(cell(csv, 3, "reason").find("no_such_param") != std::string::npos);
  CHECK(cell(csv, 4, "run") == "nodata");
  CHECK(cell(csv, 4, "status") == "failed");
  CHECK(cell(csv, 4, "reason").find("exit code 2: ") == 0);  // the child's exit code and its error line
  CHECK(cell(csv, 4, "reason").find("split 'train' has no usable images") != std::string::npos);
  CHECK(cell(csv, 1, "overrides").find("stages.train.params.optimizer.params.lr0=0.0") != std::string::npos);
  const auto md = test::read_file(out + "/summary.md");
  CHECK(md.find("| run | status |") != std::string::npos);
  CHECK(md.find("| lr0=0.01 | done |") != std::string::npos);
  CHECK(md.find("| broken | failed |") != std::string::npos);

  const std::string log1 = test::read_file(out + "/lr0=0.01/log.txt");
  const std::string log2 = test::read_file(out + "/lr0=0.02/log.txt");
  CHECK(log1.find("running 'tiny'") != std::string::npos);
  auto again = test::run_cli(cmd);
  INFO(again.output);
  CHECK(again.output.find("lr0=0.01: done already, skipped") != std::string::npos);
  CHECK(again.output.find("lr0=0.02: done already, skipped") != std::string::npos);
  CHECK(again.output.find("nodata: failed before") != std::string::npos);  // not retried without --retry-failed
  CHECK(again.output.find("0 to run") != std::string::npos);
  CHECK(test::read_file(out + "/lr0=0.01/log.txt") == log1);  // no training started again
  CHECK(test::read_file(out + "/lr0=0.02/log.txt") == log2);
  CHECK(read_csv(out + "/summary.csv").size() == 5);

  // The Slurm script: valid bash, one array task per run, every run's overrides.
  auto emit = test::run_cli(cmd + " --emit slurm --out-script " + dir + "/job.sbatch");
  INFO(emit.output);
  REQUIRE(emit.exit_code == 0);
  const auto script = test::read_file(dir + "/job.sbatch");
  CHECK(script.find("#SBATCH --array=0-3\n") != std::string::npos);
  CHECK(script.find("'stages.train.params.optimizer.params.lr0=0.01'") != std::string::npos);
  CHECK(script.find("'stages.train.params.optimizer.params.lr0=0.02'") != std::string::npos);
  CHECK(script.find("'stages.train.params.no_such_param=1'") != std::string::npos);
  CHECK(script.find("--run-dir") != std::string::npos);
  CHECK(script.find("--summary-only") != std::string::npos);
  CHECK(std::system(("bash -n " + dir + "/job.sbatch").c_str()) == 0);

  auto dry = test::run_cli(cmd + " --dry-run");
  INFO(dry.output);
  CHECK(dry.exit_code == 0);
  CHECK(dry.output.find("4 runs") != std::string::npos);
  CHECK(dry.output.find("lr0=0.01  [done]") != std::string::npos);
  CHECK(dry.output.find("stages.train.params.optimizer.params.lr0=0.02") != std::string::npos);
  CHECK(dry.output.find("invalid") != std::string::npos);
  CHECK(dry.output.find("nothing was started") != std::string::npos);

  auto bad_devices = test::run_cli(cmd + " --devices gpu0 --dry-run");
  CHECK(bad_devices.exit_code == 2);
  CHECK(bad_devices.output.find("--devices: 'gpu0' is not a CUDA device") != std::string::npos);

  // --summary-only rebuilds the summary from the folders alone.
  fs::remove(out + "/summary.csv");
  auto collect = test::run_cli(cmd + " --summary-only");
  CHECK(collect.exit_code == 0);
  CHECK(read_csv(out + "/summary.csv").size() == 5);
  test::remove_tree(dir);
}

TEST_CASE("SIGINT stops a sweep after its training saved; the same command resumes and completes the run") {
  const auto dir = setup("sweep-sigint");
  test::write_file(dir + "/sweep.json", R"({"name": "one", "base": "base.json",
    "overrides": {"epochs": 2}, "runs": [{"name": "only"}]})");
  const std::string out = dir + "/out";
  test::ChildProcess sweep({"sweep", dir + "/sweep.json", "--out", out});
  REQUIRE(wait_for_file_text(out + "/only/log.txt", "epoch 1/2  step 1/", 120000));
  sweep.signal(SIGINT);
  const int code = sweep.wait(120000);
  INFO(sweep.output());
  CHECK(code == 0);
  CHECK(sweep.output().find("SIGINT forwarded to 1 running training") != std::string::npos);
  CHECK(sweep.output().find("only: interrupted") != std::string::npos);
  CHECK(sweep.output().find("continue with: yoloflow sweep " + dir + "/sweep.json --out " + out) !=
        std::string::npos);
  CHECK(test::read_file(out + "/only/log.txt").find("interrupted by SIGINT") != std::string::npos);
  CHECK(cell(read_csv(out + "/summary.csv"), 1, "status") == "interrupted");

  auto rest = test::run_cli("sweep " + dir + "/sweep.json --out " + out);
  INFO(rest.output);
  CHECK(rest.exit_code == 0);
  CHECK(rest.output.find("only: resuming") != std::string::npos);
  CHECK(test::read_file(out + "/only/log.txt").find("resuming 'tiny'") != std::string::npos);
  const auto csv = read_csv(out + "/summary.csv");
  CHECK(cell(csv, 1, "status") == "done");
  CHECK(cell(csv, 1, "epochs") == "2/2");
  CHECK_FALSE(cell(csv, 1, "mAP50(B)").empty());
  test::remove_tree(dir);
}

TEST_CASE("the example sweep over train-coco128-cpu.json expands and every run validates") {
  const auto dir = test::temp_dir("sweep-example");
  auto r = test::run_cli("sweep " + std::string(YOLOFLOW_SOURCE_DIR) + "/pipelines/sweep-scales.json --dry-run --out " +
                         dir + "/out");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("5 runs") != std::string::npos);
  CHECK(r.output.find("scale=s,precision.plugin=amp_bf16") != std::string::npos);
  CHECK(r.output.find("n-lowlr") != std::string::npos);
  CHECK(r.output.find("invalid") == std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/out/n-lowlr"));  // a dry run starts nothing
  test::remove_tree(dir);
}

TEST_CASE("sweep --devices gives each concurrent run its own device") {
  // This machine has no CUDA, so each child fails when it opens its device: its failure
  // reason shows which device the sweep gave it.
  const auto dir = setup("sweep-devices");
  test::write_file(dir + "/sweep.json", R"({"name": "dev", "base": "base.json",
    "grid": {"stages.train.params.optimizer.params.lr0": [0.01, 0.02]}})");
  auto r = test::run_cli("sweep " + dir + "/sweep.json --out " + dir + "/out --devices 0,1");
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("lr0=0.01: starting on cuda:0") != std::string::npos);
  CHECK(r.output.find("lr0=0.02: starting on cuda:1") != std::string::npos);
  const auto csv = read_csv(dir + "/out/summary.csv");
  REQUIRE(csv.size() == 3);
  for (std::size_t i : {1, 2}) {
    CHECK(cell(csv, i, "status") == "failed");
    CHECK(cell(csv, i, "reason").find("cuda") != std::string::npos);
  }
  test::remove_tree(dir);
}
