// Small bad inputs through the CLI, as a reliability tester feeds them: each gets one clear
// line and a meaningful exit code, never a hang, a crash, memory without bound or library
// internals. Deep JSON, named pipes and folders where files belong, images over the decoder's
// limits, binary garbage in labels, an unwritable run folder, a dataset named once but
// missing, a RAM cache that does not fit, an epoch whose every sample fails, and Ctrl-C in
// predict and val.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/child_process.h"
#include "support/coco_subset.h"
#include "support/image_headers.h"
#include "support/output_checks.h"
#include "support/paths.h"
#include "support/run_cli.h"
#include "support/synthetic_pipeline.h"
#include "support/train_pipeline.h"

using namespace yoloflow;
namespace fs = std::filesystem;

namespace {

using test::contains;
using test::count;
using test::check_no_internals;
using test::seconds_since;

// A copy of the first `n` labelled coco128 train images with their labels, as an
// Ultralytics-layout dataset in `dir` (data.yaml with coco128's names).
std::string copy_coco_images(const std::string& dir, int n) {
  const std::string src = test::coco128_dir();
  fs::create_directories(dir + "/images/train");
  fs::create_directories(dir + "/labels/train");
  std::vector<fs::path> labels;
  for (const auto& e : fs::directory_iterator(src + "/labels/train2017")) labels.push_back(e.path());
  std::sort(labels.begin(), labels.end());
  for (int i = 0; i < n; ++i) {
    const std::string stem = labels[static_cast<std::size_t>(i)].stem().string();
    fs::copy_file(src + "/images/train2017/" + stem + ".jpg", dir + "/images/train/" + stem + ".jpg");
    fs::copy_file(labels[static_cast<std::size_t>(i)], dir + "/labels/train/" + stem + ".txt");
  }
  const std::string yaml = test::read_file(src + "/data.yaml");
  test::write_file(dir + "/data.yaml", "path: " + dir + "\ntrain: images/train\nval: images/train\n" +
                                           yaml.substr(yaml.find("names:")));
  return dir + "/data.yaml";
}

// A yolo_dataset -> letterbox -> collate -> throughput pipeline on `data` at 64 px.
std::string inspect_pipeline(const std::string& data, const std::string& source_extra = "") {
  return R"({"name": "inspect", "imgsz": 64, "workers": 1, "stages": {
    "source": {"plugin": "yolo_dataset", "params": {"data": ")" + data + "\"" + source_extra + R"(}},
    "letterbox": {"plugin": "letterbox", "input": "source"},
    "batch": {"plugin": "collate", "input": "letterbox", "params": {"batch": 2}},
    "sink": {"plugin": "throughput", "input": "batch"}}})";
}

}  // namespace

TEST_CASE("a megabyte of unclosed brackets is refused at once with its line, in bounded memory") {
  const std::string dir = test::temp_dir("bad-deep-json");
  test::write_file(dir + "/deep.json", std::string(1 << 20, '['));
  const auto start = std::chrono::steady_clock::now();
  // 1 GB of address space is ample for a bounded parse and far below what the old quadratic one took.
  auto r = test::run_shell("ulimit -v 4000000; " + test::cli() + " validate " + dir + "/deep.json");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(contains(r.output, "malformed JSON at line 1: objects and lists nested deeper than 64 levels"));
  CHECK(seconds_since(start) < 30);
  check_no_internals(r.output);
  test::remove_tree(dir);
}

TEST_CASE("named pipes and folders where files belong are refused by name, without blocking") {
  const std::string dir = test::temp_dir("bad-fifo");
  REQUIRE(::mkfifo((dir + "/pipe.json").c_str(), 0600) == 0);
  REQUIRE(::mkfifo((dir + "/data.yaml").c_str(), 0600) == 0);
  REQUIRE(::mkfifo((dir + "/image.jpg").c_str(), 0600) == 0);
  fs::create_directories(dir + "/folder.yaml");
  const auto start = std::chrono::steady_clock::now();

  auto pipeline = test::run_cli("validate " + dir + "/pipe.json");
  CHECK(pipeline.exit_code == 2);
  CHECK(contains(pipeline.output, "pipeline '" + dir + "/pipe.json' is not a regular file (a named pipe)"));

  test::write_file(dir + "/p.json", inspect_pipeline(dir + "/data.yaml"));
  auto data = test::run_cli("validate " + dir + "/p.json");
  CHECK(data.exit_code == 2);
  CHECK(contains(data.output, "data.yaml '" + dir + "/data.yaml' is not a regular file (a named pipe)"));

  test::write_file(dir + "/q.json", inspect_pipeline(dir + "/folder.yaml"));
  auto folder = test::run_cli("validate " + dir + "/q.json");
  CHECK(folder.exit_code == 2);
  CHECK(contains(folder.output, "is a folder; name the data.yaml file inside it"));

  auto sweep = test::run_cli("sweep " + dir + "/pipe.json");
  CHECK(sweep.exit_code == 2);
  CHECK(contains(sweep.output, "is not a regular file (a named pipe)"));

  auto source = test::run_cli("predict --weights " + dir + "/none.pt --source " + dir + "/image.jpg");
  CHECK(source.exit_code == 2);
  CHECK(contains(source.output, "--source " + dir + "/image.jpg: not a regular file"));
  CHECK(seconds_since(start) < 60);
  for (const auto* r : {&pipeline, &data, &folder, &sweep, &source}) check_no_internals(r->output);
  test::remove_tree(dir);
}

TEST_CASE("a data.yaml named once and missing is reported once, not once per stage") {
  const std::string dir = test::temp_dir("bad-missing-data");
  test::TrainPipeline p;
  p.top = R"("data": "missing.yaml")";
  std::string text = p.json();
  for (std::string::size_type at; (at = text.find("\"data\": \"data.yaml\", ")) != std::string::npos;) {
    text.erase(at, std::string("\"data\": \"data.yaml\", ").size());
  }
  test::write_file(dir + "/p.json", text);
  auto r = test::run_cli("validate " + dir + "/p.json");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(count(r.output, "missing.yaml does not exist") == 1);
  CHECK(contains(r.output, "1 problem; nothing was run"));
  test::remove_tree(dir);
}

TEST_CASE("an image over the decoder's limit and binary garbage in a label are named, the run goes on") {
  const std::string dir = test::temp_dir("bad-images");
  const std::string data = copy_coco_images(dir, 4);
  std::ofstream(dir + "/images/train/huge.png", std::ios::binary) << test::png_of_size(40000, 40000);
  test::write_file(dir + "/labels/train/huge.txt", "0 0.5 0.5 0.1 0.1\n");
  // A label file of another image overwritten with terminal escape sequences.
  std::vector<fs::path> labels;
  for (const auto& e : fs::directory_iterator(dir + "/labels/train")) labels.push_back(e.path());
  std::sort(labels.begin(), labels.end());
  std::ofstream(labels.front(), std::ios::binary) << "\x1b[2J\x1b]0;owned\x07 0.5 0.5 0.1 0.1\n";
  test::write_file(dir + "/p.json", inspect_pipeline(data));
  auto r = test::run_cli("run " + dir + "/p.json");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.output, "image too large: 40000x40000 pixels (1600 megapixels)"));
  CHECK(contains(r.output, "'\\x1b[2J\\x1b]0;owned\\x07' is not a number"));
  CHECK_FALSE(contains(r.output, "\x1b"));
  CHECK_FALSE(contains(r.output, "corrupt image"));
  test::remove_tree(dir);
}

TEST_CASE("a RAM cache over its budget falls back to reading the files with a warning") {
  const std::string dir = test::temp_dir("bad-cache-budget");
  const std::string data = copy_coco_images(dir, 4);
  test::write_file(dir + "/p.json", inspect_pipeline(data, R"(, "cache": "ram", "cache_budget_gb": 0.00001)"));
  auto r = test::run_cli("run " + dir + "/p.json");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.output, "more than cache_budget_gb's"));
  CHECK(contains(r.output, "not caching images"));
  test::write_file(dir + "/auto.json", inspect_pipeline(data, R"(, "cache": "ram")"));
  auto automatic = test::run_cli("run " + dir + "/auto.json");
  INFO(automatic.output);
  CHECK(automatic.exit_code == 0);
  CHECK(contains(automatic.output, "RAM cache of up to"));
  CHECK(contains(automatic.output, "automatic"));
  test::remove_tree(dir);
}

TEST_CASE("an epoch in which every sample fails to load is a failure, not an empty success") {
  const std::string dir = test::temp_dir("bad-all-fail");
  test::write_file(dir + "/p.json", test::synthetic_pipeline("", R"("count": 4, "fail": [0, 1, 2, 3])"));
  auto r = test::run_cli("--plugin-path " + test::test_plugin_dir("synthetic") + " run " + dir + "/p.json");
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "epoch 1: none of its 4 samples could be loaded"));
  CHECK(contains(r.output, "nothing was trained"));
  test::remove_tree(dir);
}

TEST_CASE("a run folder that cannot be made or written is refused before anything runs") {
  const std::string dir = test::temp_dir("bad-run-dir");
  test::write_coco128_subset(dir, 4);
  test::TrainPipeline p;
  test::write_file(dir + "/p.json", p.json());
  test::write_file(dir + "/a-file", "");
  auto under_file = test::run_cli("train " + dir + "/p.json --run-dir " + dir + "/a-file/run");
  INFO(under_file.output);
  CHECK(under_file.exit_code == 2);
  CHECK(contains(under_file.output, "cannot create the run folder " + dir + "/a-file/run: a part of the path is a file, not a folder"));
  check_no_internals(under_file.output);
  auto is_file = test::run_cli("train " + dir + "/p.json --run-dir " + dir + "/a-file");
  CHECK(is_file.exit_code == 2);
  CHECK(contains(is_file.output, "the run folder " + dir + "/a-file is a file, not a folder"));
  if (::getuid() != 0) {  // root writes into any folder: the permission check is for users
    fs::create_directories(dir + "/locked");
    fs::permissions(dir + "/locked", fs::perms::owner_read | fs::perms::owner_exec);
    auto locked = test::run_cli("train " + dir + "/p.json --run-dir " + dir + "/locked --exist-ok");
    CHECK(locked.exit_code == 2);
    CHECK(contains(locked.output, "cannot write into the run folder " + dir + "/locked: permission denied"));
    fs::permissions(dir + "/locked", fs::perms::owner_all);
  }
  test::remove_tree(dir);
}

TEST_CASE("Ctrl-C in predict finishes the image in hand and leaves complete outputs of the images done") {
  const std::string dir = test::temp_dir("bad-predict-sigint");
  test::write_coco128_subset(dir, 4);
  test::TrainPipeline p;
  p.top = R"("device": "cpu")";
  test::write_file(dir + "/p.json", p.json());
  auto trained = test::train_coco128_cpu(dir + "/data.yaml", dir + "/run", "epochs=1");
  INFO(trained.output);
  REQUIRE(trained.exit_code == 0);
  const std::string out = dir + "/predict";
  test::ChildProcess predict({"predict", "--weights", dir + "/run/weights/last.pt", "--source",
                              test::coco128_dir() + "/images/train2017", "--out", out, "--imgsz", "64", "--device", "cpu", "--save-txt"});
  REQUIRE(predict.wait_for_output("image 3/128", 120000));
  predict.signal(SIGINT);
  const int rc = predict.wait(120000);
  INFO(predict.output());
  CHECK(rc == 130);
  CHECK(contains(predict.output(), "interrupt: stopping after this image"));
  CHECK(contains(predict.output(), "interrupted by SIGINT after "));
  const auto predictions = nlohmann::json::parse(test::read_file(out + "/predictions.json"));
  std::size_t labels = 0;
  for (const auto& e : fs::directory_iterator(out + "/labels")) labels += e.path().extension() == ".txt";
  CHECK(predictions.size() >= 3);
  CHECK(predictions.size() < 128);
  CHECK(labels == predictions.size());
  for (const auto& e : fs::directory_iterator(out)) {
    CHECK_MESSAGE(e.path().filename().string()[0] != '.', "a temporary file was left: " << e.path());
  }
  test::remove_tree(dir);
}

TEST_CASE("Ctrl-C in val says so and writes nothing") {
  const std::string dir = test::temp_dir("bad-val-sigint");
  const std::string data = test::write_coco128_subset(dir, 4);
  auto trained = test::train_coco128_cpu(data, dir + "/run", "epochs=1");
  REQUIRE(trained.exit_code == 0);
  const std::string out = dir + "/val";
  // All 128 coco128 images at full size, one at a time: long enough to be interrupted.
  test::ChildProcess val({"val", "--weights", dir + "/run/weights/last.pt", "--data", test::coco128_dir() + "/data.yaml",
                          "--split", "train", "--batch", "1", "--device", "cpu", "--out", out});
  REQUIRE(val.wait_for_output("val: validating 128 images", 120000));
  val.signal(SIGINT);
  const int rc = val.wait(120000);
  INFO(val.output());
  CHECK(rc == 130);
  CHECK(contains(val.output(), "interrupt: stopping validation; no metrics are written"));
  CHECK(contains(val.output(), "nothing was written"));
  CHECK_FALSE(fs::exists(out));
  test::remove_tree(dir);
}
