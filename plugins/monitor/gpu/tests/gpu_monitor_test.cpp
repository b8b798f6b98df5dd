// gpu monitor: the recorder with a sampler of the test's own (readings filed under the right
// epoch, the CSV equal to what was sampled, means and peaks, a resumed run appending), the
// summary line, which GPU a run's device is, and the plugin through the CLI: on a machine
// without NVML (one warning, the run completes, no gpu.csv; `required` makes it an error) and
// with a stand-in NVML library (tests/fake_nvml) whose devices read constant counters.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "monitor/gpu/device_choice.h"
#include "monitor/gpu/gpu_recorder.h"
#include "yoloflow/monitor.h"
#include "support/coco_subset.h"
#include "support/paths.h"
#include "support/plugin_set.h"
#include "support/run_cli.h"

using namespace yoloflow;
using namespace yoloflow::gpu_monitor;
namespace fs = std::filesystem;

namespace {

// Reading n: utilisation n % 101, memory n/10 GiB of 80, power unknown, clock 1000 + n.
class CountingSampler final : public GpuSampler {
 public:
  explicit CountingSampler(std::atomic<int>& count) : count_(count) {}
  GpuReading read() override {
    const int n = count_++;
    GpuReading r;
    r.util_percent = n % 101;
    r.mem_util_percent = 50;
    r.mem_used_gib = n / 10.0;
    r.mem_total_gib = 80;
    r.sm_clock_mhz = 1000 + n;
    return r;
  }

 private:
  std::atomic<int>& count_;
};

struct CsvRow {
  std::map<std::string, std::string> cells;
  double num(const std::string& c) const { return std::stod(cells.at(c)); }
};

std::vector<CsvRow> read_csv(const std::string& path, std::string* header = nullptr) {
  std::istringstream in(test::read_file(path));
  std::string line;
  std::getline(in, line);
  if (header) *header = line;
  std::vector<std::string> columns;
  std::istringstream h(line);
  for (std::string c; std::getline(h, c, ',');) columns.push_back(c);
  std::vector<CsvRow> rows;
  while (std::getline(in, line)) {
    CsvRow row;
    std::size_t i = 0, start = 0;
    for (; i < columns.size(); ++i) {
      const auto comma = line.find(',', start);
      row.cells[columns[i]] = line.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    REQUIRE_MESSAGE(i + 1 == columns.size(), "row with " << i + 1 << " cells: " << line);
    rows.push_back(row);
  }
  return rows;
}

const char* fake_env(const char* name) {
  const std::string n = name;
  if (n == "WORLD_SIZE") return "4";
  if (n == "LOCAL_RANK") return "3";
  return nullptr;
}
const char* empty_env(const char*) { return nullptr; }

}  // namespace

TEST_CASE("gpu recorder: readings filed per epoch, CSV equal to the samples, means and peaks") {
  const std::string dir = test::temp_dir("gpu-recorder");
  const std::string csv = dir + "/gpu.csv";
  std::atomic<int> count{0};
  EpochStats first, second;
  {
    GpuRecorder rec(std::make_unique<CountingSampler>(count), std::chrono::milliseconds(2), csv);
    while (count < 10) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    rec.file_under(0);  // a step report from epoch 0
    while (count < 15) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    first = rec.end_epoch(0);
    while (count < 25) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    second = rec.end_epoch(1);
    rec.stop();
  }
  const int taken = count.load();
  std::string header;
  const auto rows = read_csv(csv, &header);
  CHECK(header == GpuRecorder::kCsvHeader);
  // Every reading taken is in the CSV once, in order: utilisation n counts up from 0.
  REQUIRE(static_cast<int>(rows.size()) == taken);
  long in_first = 0, in_second = 0;
  double util_first = 0, util_second = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    CAPTURE(i);
    CHECK(rows[i].num("gpu_util") == static_cast<double>(i % 101));
    CHECK(rows[i].num("sm_clock_MHz") == 1000.0 + static_cast<double>(i));
    CHECK(rows[i].num("mem_total_GiB") == 80.0);
    CHECK(rows[i].cells.at("power_W").empty());  // the sampler could not read it
    if (i > 0) CHECK(rows[i].num("time") >= rows[i - 1].num("time"));
    const double epoch = rows[i].num("epoch");
    if (epoch == 1) {
      ++in_first;
      util_first += rows[i].num("gpu_util");
    } else {
      REQUIRE(epoch == 2);  // readings after the last epoch end go under the last epoch
      ++in_second;
      util_second += rows[i].num("gpu_util");
    }
  }
  CHECK(in_first >= 14);  // reading 15 may be in flight at the epoch end
  CHECK(in_first == first.samples());
  CHECK(in_second >= 1);
  // The epoch's statistics are those of the rows filed under it (the run-end tail aside).
  CHECK(first.util().mean() == doctest::Approx(util_first / static_cast<double>(in_first)));
  CHECK(first.mem_used().max() == doctest::Approx((in_first - 1) / 10.0));
  CHECK(first.power().empty());
  CHECK(second.samples() <= in_second);
  CHECK(second.util().mean() >= first.util().max());  // later readings count higher
  test::remove_tree(dir);
}

TEST_CASE("gpu recorder: an epoch shorter than the interval still gets a reading; a resumed run appends") {
  const std::string dir = test::temp_dir("gpu-recorder-short");
  const std::string csv = dir + "/gpu.csv";
  std::atomic<int> count{0};
  {
    GpuRecorder rec(std::make_unique<CountingSampler>(count), std::chrono::milliseconds(60000), csv);
    while (count < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // until it is filed as pending
    CHECK(rec.end_epoch(0).samples() == 1);  // the reading taken at start
    const auto second = rec.end_epoch(1);    // none pending: one taken now
    CHECK(second.samples() == 1);
    CHECK(second.util().mean() == 1.0);
  }
  {
    GpuRecorder rec(std::make_unique<CountingSampler>(count), std::chrono::milliseconds(60000), csv);
    while (count < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    rec.end_epoch(2);
  }
  std::string header;
  const auto rows = read_csv(csv, &header);
  CHECK(header == GpuRecorder::kCsvHeader);
  REQUIRE(rows.size() == 3);  // one header, rows of both runs
  CHECK(rows[0].num("epoch") == 1);
  CHECK(rows[1].num("epoch") == 2);
  CHECK(rows[2].num("epoch") == 3);
  CHECK(rows[2].num("gpu_util") == 2);
  test::remove_tree(dir);
}

TEST_CASE("gpu summary: mean utilisation, peak memory, mean power and clock; unknown counters left out") {
  EpochStats s;
  GpuReading a;
  a.util_percent = 90;
  a.mem_used_gib = 5.1;
  a.mem_total_gib = 140.0;
  a.power_w = 300;
  a.sm_clock_mhz = 1980;
  GpuReading b = a;
  b.util_percent = 98;
  b.mem_used_gib = 4.0;
  b.power_w = 320;
  s.add(a);
  s.add(b);
  CHECK(s.summary("cuda:0 GPU 0 (H200)") ==
        "cuda:0 GPU 0 (H200): busy 94% (mean, max 98%), mem 5.1/140.0 GiB (peak), 310 W (mean), SM 1980 MHz "
        "(mean), 2 samples");
  EpochStats mig;  // MIG: no utilisation, power or clock
  GpuReading m;
  m.mem_used_gib = 2.25;
  m.mem_total_gib = 20;
  mig.add(m);
  CHECK(mig.summary("g") == "g: mem 2.2/20.0 GiB (peak), 1 sample");
  CHECK(EpochStats().summary("g") == "g: no samples this epoch");
}

TEST_CASE("gpu device choice: cuda index of the run, CUDA_VISIBLE_DEVICES indices and UUIDs") {
  CHECK(cuda_index_of_run("cpu", &empty_env) == -1);
  CHECK(cuda_index_of_run("cuda:2", &empty_env) == 2);
  CHECK(cuda_index_of_run("cuda", &empty_env) == 0);
  CHECK(cuda_index_of_run("auto", &empty_env) == 0);
  CHECK(cuda_index_of_run("cuda", &fake_env) == 3);  // data parallel: cuda:<LOCAL_RANK>

  auto d = choose_device(1, nullptr);
  CHECK(d.error.empty());
  CHECK(d.nvml_index == 1);
  d = choose_device(1, "3, 5");
  CHECK(d.nvml_index == 5);
  CHECK_FALSE(d.by_uuid);
  d = choose_device(0, "GPU-8f3a1c2e-0000-1111-2222-333344445555,1");
  CHECK(d.by_uuid);
  CHECK(d.uuid == "GPU-8f3a1c2e-0000-1111-2222-333344445555");
  d = choose_device(2, "0,1");
  CHECK(d.error == "the run uses cuda:2 but CUDA_VISIBLE_DEVICES='0,1' makes 2 devices visible");
  d = choose_device(0, "");
  CHECK(d.error.find("makes 0 devices visible") != std::string::npos);
  d = choose_device(0, "nvidia0");
  CHECK(d.error.find("entry 'nvidia0'") != std::string::npos);
}

// The inspect pipeline over 4 coco128 images, 2 epochs, with the gpu monitor's `params`.
static std::string write_inspect_pipeline(const std::string& dir, const std::string& params) {
  return test::write_inspect_pipeline(dir, 2, R"([{"plugin": "gpu", "params": )" + params + "}]");
}

TEST_CASE("gpu monitor with an NVML library: the visible device sampled, summaries per epoch, gpu.csv") {
  const std::string dir = test::temp_dir("gpu-fake-nvml");
  const std::string library = test::test_plugin_dir("fake_nvml") + "/libfake_nvml.so";
  REQUIRE(fs::exists(library));
  const std::string pipeline =
      write_inspect_pipeline(dir, R"({"library": ")" + library + R"(", "interval_ms": 10})");
  // cuda:0 is the second GPU when CUDA_VISIBLE_DEVICES=1.
  const auto res = test::run_cli("run " + pipeline + " --run-dir " + dir + "/run", "CUDA_VISIBLE_DEVICES=1 ");
  INFO(res.output);
  REQUIRE(res.exit_code == 0);
  CHECK(res.output.find("gpu: sampling cuda:0 GPU 1 (Fake GPU 1) every 10 ms; readings in " + dir + "/run/gpu.csv") !=
        std::string::npos);
  const std::string summary =
      "  cuda:0 GPU 1 (Fake GPU 1): busy 50% (mean, max 50%), mem 6.0/80.0 GiB (peak), 301 W (mean), SM 1501 MHz "
      "(mean), ";
  const auto first = res.output.find(summary);
  REQUIRE(first != std::string::npos);
  CHECK(res.output.find(summary, first + 1) != std::string::npos);  // one per epoch
  CHECK(res.output.find("epoch 2/2") != std::string::npos);
  const auto rows = read_csv(dir + "/run/gpu.csv");
  REQUIRE(rows.size() >= 2);
  std::map<int, int> per_epoch;
  for (const auto& r : rows) {
    ++per_epoch[static_cast<int>(r.num("epoch"))];
    CHECK(r.num("gpu_util") == 50);
    CHECK(r.num("mem_util") == 20);
    CHECK(r.num("mem_used_GiB") == 6.0);
    CHECK(r.num("mem_total_GiB") == 80.0);
    CHECK(r.num("power_W") == 301.0);
    CHECK(r.num("sm_clock_MHz") == 1501);
  }
  CHECK(per_epoch.count(1) == 1);
  CHECK(per_epoch.count(2) == 1);
  CHECK(per_epoch.size() == 2);

  // A UUID entry selects the device by UUID; an index NVML lacks is one warning, no failure.
  const auto by_uuid = test::run_cli("run " + pipeline, "CUDA_VISIBLE_DEVICES=GPU-fake-0,1 ");
  CHECK(by_uuid.exit_code == 0);
  CHECK(by_uuid.output.find("gpu: sampling cuda:0 GPU-fake-0 (Fake GPU 0) every 10 ms") != std::string::npos);
  CHECK(by_uuid.output.find("  cuda:0 GPU-fake-0 (Fake GPU 0): busy 40% (mean, max 40%), mem 5.0/80.0 GiB") !=
        std::string::npos);
  const auto absent = test::run_cli("run " + pipeline, "CUDA_VISIBLE_DEVICES=7 ");
  CHECK(absent.exit_code == 0);
  CHECK(absent.output.find("gpu: cannot open NVML device 7 (for cuda:0): Invalid Argument (2); GPU monitoring is off") !=
        std::string::npos);
  test::remove_tree(dir);
}

TEST_CASE("gpu monitor without NVML: one warning, the run completes, no gpu.csv; required makes it an error") {
  const std::string dir = test::temp_dir("gpu-no-nvml");
  // A library name no machine has, so this path is taken on GPU machines too.
  write_inspect_pipeline(dir, R"({"library": "libnvidia-ml-absent.so.1"})");
  const auto res = test::run_cli("run " + dir + "/inspect.json --run-dir " + dir + "/run", "CUDA_VISIBLE_DEVICES=0 ");
  INFO(res.output);
  CHECK(res.exit_code == 0);
  const std::string warning = "gpu: cannot load libnvidia-ml-absent.so.1 (no NVIDIA driver on this machine?)";
  const auto first = res.output.find(warning);
  CHECK(first != std::string::npos);
  CHECK(res.output.find(warning, first + 1) == std::string::npos);  // once, not per epoch
  CHECK(res.output.find("GPU monitoring is off for this run") != std::string::npos);
  CHECK(res.output.find("epoch 2/2") != std::string::npos);
  CHECK(fs::exists(dir + "/run/pipeline.json"));
  CHECK_FALSE(fs::exists(dir + "/run/gpu.csv"));

  const auto cpu = test::run_cli("run " + dir + "/inspect.json device=cpu");
  CHECK(cpu.exit_code == 0);
  CHECK(cpu.output.find("gpu: the run trains on the CPU (device 'cpu'); GPU monitoring is off") != std::string::npos);

  const auto strict = test::run_cli("run " + dir + "/inspect.json monitors.0.params.required=true", "CUDA_VISIBLE_DEVICES=0 ");
  CHECK(strict.exit_code == 1);
  CHECK(strict.output.find(warning) != std::string::npos);
  CHECK(strict.output.find("(the gpu monitor's `required` is true)") != std::string::npos);
  test::remove_tree(dir);
}

namespace {

// What a stage's reporter receives; the host merges epoch values into the EpochEvent that
// every monitor (TensorBoard among them) gets when the epoch ends.
class RecordingReporter final : public RunReporter {
 public:
  void step(const StepEvent&) override {}
  void epoch_values(const std::map<std::string, double>& values) override {
    for (const auto& kv : values) values_[kv.first] = kv.second;
  }
  void request_stop(const std::string&) override {}
  std::map<std::string, double> values_;
};

}  // namespace

TEST_CASE("gpu monitor reports the epoch's utilisation, memory and power as run values for other monitors") {
  const std::string dir = test::temp_dir("gpu-values");
  const std::string library = test::test_plugin_dir("fake_nvml") + "/libfake_nvml.so";
  auto& pm = plugin_test::plugins_with("gpu");
  const Params params = plugin_test::checked_params(pm, Kind::Monitor, "gpu", {{"library", library}, {"interval_ms", 10}},
                                             "monitors[0].params");
  auto monitor = std::unique_ptr<Monitor>(static_cast<Monitor*>(plugin_test::create(pm, Kind::Monitor, "gpu")));
  RecordingReporter reporter;
  StageContext ctx;
  ctx.reporter = &reporter;
  monitor->configure(params, ctx);
  RunEvent run;
  run.run_dir = dir;
  run.device = "cuda:1";  // no CUDA_VISIBLE_DEVICES: NVML device 1, "Fake GPU 1"
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  monitor->on_run_start(run);
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  StepEvent step;
  monitor->on_step(step);
  INFO("values reported: " << reporter.values_.size());
  CHECK(reporter.values_.at("gpu/busy_percent") == 50);
  CHECK(reporter.values_.at("gpu/mem_busy_percent") == 20);
  CHECK(reporter.values_.at("gpu/mem_used_GiB") == 6.0);
  CHECK(reporter.values_.at("gpu/power_W") == 301.0);
  CHECK(reporter.values_.at("gpu/sm_clock_MHz") == 1501);
  monitor->on_run_end(run);
  test::remove_tree(dir);
}

TEST_CASE("gpu monitor: below busy_target the epoch summary says why, from the trainer's data wait and step times") {
  const std::string library = test::test_plugin_dir("fake_nvml") + "/libfake_nvml.so";
  auto& pm = plugin_test::plugins_with("gpu");
  auto run_epoch = [&](double busy_target, double data_wait_s, double step_s, EpochEvent epoch = {}) {
    const Params params = plugin_test::checked_params(
        pm, Kind::Monitor, "gpu", {{"library", library}, {"interval_ms", 10}, {"busy_target", busy_target}},
        "monitors[0].params");
    auto monitor = std::unique_ptr<Monitor>(static_cast<Monitor*>(plugin_test::create(pm, Kind::Monitor, "gpu")));
    monitor->configure(params, StageContext{});
    RunEvent run;
    run.device = "cuda:0";  // "Fake GPU 0": 40% busy
    ::unsetenv("CUDA_VISIBLE_DEVICES");
    monitor->on_run_start(run);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    for (int i = 0; i < 3; ++i) {
      StepEvent step;
      step.values["time/data_wait"] = data_wait_s;
      step.values["time/step"] = step_s;
      monitor->on_step(step);
    }
    monitor->on_epoch(epoch);
    const std::string summary = monitor->epoch_summary();
    monitor->on_run_end(run);
    return summary;
  };
  const std::string starved = run_epoch(80, 0.030, 0.010);
  INFO(starved);
  CHECK(starved.find("busy 40%") != std::string::npos);
  CHECK(starved.find("GPU busy 40% (< 80%): the training step waited for data 75% of the time") != std::string::npos);
  CHECK(starved.find("`workers`") != std::string::npos);
  CHECK(starved.find("`max_in_flight`") != std::string::npos);
  const std::string host_bound = run_epoch(80, 0.001, 0.099);
  INFO(host_bound);
  CHECK(host_bound.find("with batches ready (data wait 1% of the time): the step is host-bound") != std::string::npos);
  CHECK(host_bound.find("`cuda_graph: true`") != std::string::npos);
  // Some data wait and still idle (a captured step fed a little too slowly): both causes named.
  const std::string both = run_epoch(80, 0.004, 0.023);
  INFO(both);
  CHECK(both.find("waited for data 15% of the time and the step itself leaves the GPU idle") != std::string::npos);
  CHECK(both.find("`workers`") != std::string::npos);
  CHECK(both.find("`cuda_graph: true`") != std::string::npos);
  // A captured step: the epoch of its warm-up and capture is said to be that, and a steady
  // host-bound epoch is not told to capture what already is.
  EpochEvent capture_epoch;
  capture_epoch.values["step/eager"] = 4;
  capture_epoch.values["step/replayed"] = 4;
  const std::string capturing = run_epoch(80, 0.001, 0.099, capture_epoch);
  INFO(capturing);
  CHECK(capturing.find("this epoch includes the training step's warm-up and CUDA graph capture (4 eager steps, then 4 "
                       "replayed)") != std::string::npos);
  CHECK(capturing.find("`cuda_graph: true`") == std::string::npos);
  EpochEvent replayed_epoch;
  replayed_epoch.values["step/eager"] = 0;
  replayed_epoch.values["step/replayed"] = 8;
  const std::string replaying = run_epoch(80, 0.001, 0.099, replayed_epoch);
  INFO(replaying);
  CHECK(replaying.find("the step is host-bound") != std::string::npos);
  CHECK(replaying.find("the step is already a CUDA graph") != std::string::npos);
  CHECK(replaying.find("`cuda_graph: true`") == std::string::npos);
  // Batches ready and steps fine, but a quarter of a short epoch outside its batches (the
  // runner's first-batch and end-of-epoch times: a synchronous checkpoint write).
  EpochEvent short_epoch;
  short_epoch.seconds = 2.8;
  short_epoch.values["time/first_batch"] = 0.1;
  short_epoch.values["time/end_of_epoch"] = 0.6;
  const std::string boundary = run_epoch(80, 0.0005, 0.027, short_epoch);
  INFO(boundary);
  CHECK(boundary.find("GPU busy 40% (< 80%): 25% of the epoch passed outside its batches (0.10 s filling the "
                      "pipeline, 0.60 s at the end") != std::string::npos);
  CHECK(boundary.find("`save_async`") != std::string::npos);
  // The same boundary in a long epoch is not the reason: the step is.
  short_epoch.seconds = 70.0;
  const std::string long_epoch = run_epoch(80, 0.0005, 0.027, short_epoch);
  CHECK(long_epoch.find("the step is host-bound") != std::string::npos);
  const std::string busy_enough = run_epoch(30, 0.030, 0.010);
  CHECK(busy_enough.find("GPU busy") == std::string::npos);  // 40% >= 30%: nothing to explain
  CHECK(busy_enough.find("busy 40%") != std::string::npos);
}
