// tensorboard: the encoder against hand-computed bytes, the monitor driven directly (step
// interval, images logged when they change, a log folder that cannot be created), and a real
// CPU training through the CLI whose event file, read back by an independent reader, holds
// results.csv's values at each epoch, the step reports, and results.png as a PNG.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "monitor/tensorboard/tests/tfevent_reader.h"
#include "monitor/tensorboard/tfevent_format.h"
#include "support/coco_subset.h"
#include "support/plugin_set.h"
#include "support/run_cli.h"
#include "yoloflow/error.h"
#include "yoloflow/monitor.h"

using namespace yoloflow;
namespace fs = std::filesystem;
namespace rd = yoloflow::test::tfevent_reader;

namespace {

std::string bytes(std::initializer_list<int> values) {
  std::string s;
  for (int v : values) s.push_back(static_cast<char>(v));
  return s;
}

// The event files in `dir` (TensorBoard reads every file whose name holds "tfevents").
std::vector<std::string> event_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0) out.push_back(e.path().string());
  }
  return out;
}

std::vector<rd::Event> read_events(const std::string& file) {
  std::vector<rd::Event> out;
  for (const auto& payload : rd::read_records(test::read_file(file))) out.push_back(rd::parse_event(payload));
  return out;
}

const rd::Value* find_value(const rd::Event& e, const std::string& tag) {
  for (const auto& v : e.values) {
    if (v.tag == tag) return &v;
  }
  return nullptr;
}

std::unique_ptr<Monitor> make_monitor(const json& params) {
  static plugin_test::PluginSet pm;
  return plugin_test::make_component<Monitor>(pm, Kind::Monitor, "tensorboard", params, {640, "monitors[0]", "tensorboard"});
}

// results.csv as rows of column -> value.
std::vector<std::map<std::string, double>> read_results_csv(const std::string& path) {
  std::istringstream in(test::read_file(path));
  std::string line;
  std::vector<std::string> columns;
  std::getline(in, line);
  std::istringstream header(line);
  for (std::string c; std::getline(header, c, ',');) columns.push_back(c);
  std::vector<std::map<std::string, double>> rows;
  while (std::getline(in, line)) {
    std::istringstream cells(line);
    std::map<std::string, double> row;
    std::size_t i = 0;
    for (std::string cell; std::getline(cells, cell, ',') && i < columns.size(); ++i) {
      if (!cell.empty()) row[columns[i]] = std::strtod(cell.c_str(), nullptr);
    }
    rows.push_back(row);
  }
  return rows;
}

}  // namespace

TEST_CASE("tensorboard encoding: CRC32C check value, masked CRC and a hand-computed record") {
  CHECK(tfevent::crc32c("123456789", 9) == 0xE3069283u);
  CHECK(rd::crc32c_bitwise("123456789") == 0xE3069283u);
  CHECK(tfevent::masked_crc32c("123456789", 9) == 0xC78AB0E5u);
  // Event{wall_time 2.5, step 300, summary {value {tag "a", simple_value 1.0}}}, framed.
  const std::string expected = bytes({
      0x18, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,                    // length 24
      0xA3, 0x7F, 0x4B, 0x22,                                            // masked CRC of the length
      0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x40,              // 1: double 2.5
      0x10, 0xAC, 0x02,                                                  // 2: varint 300
      0x2A, 0x0A, 0x0A, 0x08, 0x0A, 0x01, 0x61, 0x15, 0x00, 0x00, 0x80, 0x3F,  // 5: summary
      0x58, 0x51, 0x35, 0x8D});                                          // masked CRC of the payload
  CHECK(tfevent::framed_record(tfevent::scalars_event(2.5, 300, {{"a", 1.0f}})) == expected);
  // The file's first record, read back: the version string TensorBoard checks.
  const auto records = rd::read_records(tfevent::framed_record(tfevent::file_version_event(7.0)));
  REQUIRE(records.size() == 1);
  const auto e = rd::parse_event(records[0]);
  CHECK(e.file_version == "brain.Event:2");
  CHECK(e.wall_time == 7.0);
  // A negative step is a 10-byte varint of its two's complement.
  CHECK(rd::parse_event(tfevent::scalars_event(0, -1, {})).step == -1);
  // A damaged byte fails the payload CRC.
  std::string damaged = expected;
  damaged[20] ^= 1;
  CHECK_THROWS_WITH(rd::read_records(damaged), doctest::Contains("bad payload CRC"));
}

TEST_CASE("tensorboard monitor: step interval, epoch values, images logged once per change") {
  const std::string dir = test::temp_dir("tensorboard-direct");
  auto monitor = make_monitor({{"step_interval", 5}});
  RunEvent run;
  run.run_dir = dir;
  run.epochs = 2;
  monitor->on_run_start(run);
  for (std::int64_t g = 0; g <= 12; ++g) {
    StepEvent s;
    s.global_step = g;
    s.images_per_second = 100.0 + g;
    s.values["train/box_loss"] = 0.5 * g;
    monitor->on_step(s);
  }
  cv::Mat image(24, 40, CV_8UC3, cv::Scalar(10, 200, 30));
  REQUIRE(cv::imwrite(dir + "/results.png", image));
  test::write_file(dir + "/notes.txt", "not an image");
  EpochEvent ep;
  ep.epoch = 0;
  ep.epochs = 2;
  ep.values = {{"epoch", 1}, {"metrics/mAP50(B)", 0.25}, {"lr/pg0", 0.01}};
  monitor->on_epoch(ep);
  ep.epoch = 1;
  ep.values["metrics/mAP50(B)"] = 0.5;
  monitor->on_epoch(ep);  // results.png unchanged: not logged again
  cv::Mat wider(24, 48, CV_8UC1, cv::Scalar(99));
  REQUIRE(cv::imwrite(dir + "/results.png", wider));
  monitor->on_run_end(run);

  const auto files = event_files(dir);
  REQUIRE(files.size() == 1);
  const auto events = read_events(files[0]);
  REQUIRE(events.size() == 1 + 3 + 2 + 2);
  CHECK(events[0].file_version == "brain.Event:2");
  std::vector<std::int64_t> steps;
  for (std::size_t i = 1; i <= 3; ++i) {
    steps.push_back(events[i].step);
    const auto* loss = find_value(events[i], "step/train/box_loss");
    REQUIRE(loss != nullptr);
    CHECK(loss->simple_value == doctest::Approx(0.5 * static_cast<double>(events[i].step)));
    REQUIRE(find_value(events[i], "step/images_per_second") != nullptr);
  }
  CHECK(steps == std::vector<std::int64_t>{0, 5, 10});
  // Epoch 1: scalars, then the image; epoch 2: scalars only; run end: the changed image.
  CHECK(events[4].step == 1);
  CHECK(find_value(events[4], "epoch") == nullptr);  // it is the step axis
  REQUIRE(find_value(events[4], "metrics/mAP50(B)") != nullptr);
  CHECK(find_value(events[4], "metrics/mAP50(B)")->simple_value == 0.25f);
  const auto* first_image = find_value(events[5], "results");
  REQUIRE(first_image != nullptr);
  REQUIRE(first_image->has_image);
  CHECK(first_image->image.width == 40);
  CHECK(first_image->image.height == 24);
  CHECK(first_image->image.colorspace == 3);
  const cv::Mat decoded = cv::imdecode(
      std::vector<unsigned char>(first_image->image.encoded.begin(), first_image->image.encoded.end()),
      cv::IMREAD_UNCHANGED);
  REQUIRE(decoded.cols == 40);
  CHECK(cv::norm(decoded, image, cv::NORM_INF) == 0);  // PNG is lossless
  CHECK(events[6].step == 2);
  CHECK(find_value(events[6], "metrics/mAP50(B)")->simple_value == 0.5f);
  const auto* second_image = find_value(events[7], "results");
  REQUIRE(second_image != nullptr);
  CHECK(events[7].step == 2);
  CHECK(second_image->image.width == 48);
  CHECK(second_image->image.colorspace == 1);
  for (std::size_t i = 1; i < events.size(); ++i) CHECK(events[i].wall_time >= events[i - 1].wall_time);
  test::remove_tree(dir);
}

TEST_CASE("tensorboard monitor: a log folder that cannot be created is an error naming it") {
  const std::string dir = test::temp_dir("tensorboard-bad-dir");
  test::write_file(dir + "/file", "x");
  auto monitor = make_monitor({{"log_dir", dir + "/file/tb"}});
  RunEvent run;
  run.run_dir = dir;
  const std::string expected = "cannot create the log folder '" + dir + "/file/tb'";
  CHECK_THROWS_WITH_AS(monitor->on_run_start(run), doctest::Contains(expected.c_str()), Error);
  test::remove_tree(dir);
}

TEST_CASE("tensorboard monitor in a CPU training: epoch scalars equal results.csv, steps, results.png") {
  const std::string dir = test::temp_dir("tensorboard-train");
  test::write_coco128_subset(dir, 8);
  // 8 images, batch 2 = nominal batch: 4 optimizer steps an epoch, each reported.
  test::write_file(dir + "/tb.json", R"({
  "name": "tb", "epochs": 3, "imgsz": 64, "seed": 1, "device": "cpu",
  "stages": {
    "source": {"plugin": "yolo_dataset", "params": {"data": "data.yaml", "split": "train"}},
    "letterbox": {"plugin": "letterbox", "input": "source"},
    "batch": {"plugin": "collate", "input": "letterbox", "params": {"batch": 2}},
    "train": {"plugin": "train", "input": "batch", "params": {
      "data": "data.yaml", "optimizer": {"plugin": "sgd", "params": {"lr0": 0.01}}, "scheduler": {"plugin": "linear"},
      "nominal_batch": 2, "warmup_epochs": 0, "val_every": 1, "log_every": 1
    }}
  },
  "monitors": [{"plugin": "tensorboard", "params": {"step_interval": 1}}]
})");
  const std::string run_dir = dir + "/run";
  const auto before = std::chrono::system_clock::now();
  const auto res = test::run_cli("train " + dir + "/tb.json --run-dir " + run_dir);
  INFO(res.output);
  REQUIRE(res.exit_code == 0);
  CHECK(res.output.find("tensorboard: logging to " + run_dir + "/events.out.tfevents.") != std::string::npos);

  const auto files = event_files(run_dir);
  REQUIRE(files.size() == 1);
  const std::string name = fs::path(files[0]).filename().string();
  const double file_seconds = std::stod(name.substr(std::string("events.out.tfevents.").size()));
  const double start = std::chrono::duration<double>(before.time_since_epoch()).count();
  CHECK(file_seconds >= std::floor(start));
  CHECK(file_seconds <= start + 600);

  const auto events = read_events(files[0]);
  REQUIRE(!events.empty());
  CHECK(events[0].file_version == "brain.Event:2");
  const auto rows = read_results_csv(run_dir + "/results.csv");
  REQUIRE(rows.size() == 3);

  std::int64_t last_global_step = -1;
  int step_records = 0, epochs_seen = 0;
  const rd::Event* last_step_record = nullptr;
  const rd::Value* image = nullptr;
  for (std::size_t i = 1; i < events.size(); ++i) {
    const auto& e = events[i];
    CHECK(e.wall_time >= events[i - 1].wall_time);
    if (find_value(e, "step/train/box_loss") != nullptr) {
      CHECK(e.step > last_global_step);  // strictly increasing global steps
      last_global_step = e.step;
      ++step_records;
      last_step_record = &e;
      for (const char* tag : {"step/images_per_second", "step/train/cls_loss", "step/train/dfl_loss", "step/lr/pg0",
                              "step/time/step", "step/time/data_wait", "step/loss_scale"}) {
        CHECK_MESSAGE(find_value(e, tag) != nullptr, tag);
      }
    } else if (find_value(e, "train/box_loss") != nullptr) {
      ++epochs_seen;
      REQUIRE(epochs_seen <= 3);
      CHECK(e.step == epochs_seen);
      const auto& row = rows[static_cast<std::size_t>(epochs_seen - 1)];
      REQUIRE(row.at("epoch") == epochs_seen);
      for (const auto& [column, value] : row) {
        if (column == "epoch") continue;
        CAPTURE(column);
        const auto* v = find_value(e, column);
        REQUIRE(v != nullptr);
        REQUIRE(v->has_simple_value);
        // results.csv keeps 6 significant digits, the event a float.
        CHECK(static_cast<double>(v->simple_value) == doctest::Approx(value).epsilon(1e-5));
      }
      for (const char* tag : {"metrics/mAP50(B)", "metrics/mAP50-95(B)", "val/box_loss", "lr/pg0"}) {
        CHECK_MESSAGE(find_value(e, tag) != nullptr, tag);
      }
      // The epoch's last step report is the running mean over the whole epoch: the row's loss.
      REQUIRE(last_step_record != nullptr);
      CHECK(last_step_record->step == 4 * epochs_seen);
      CHECK(static_cast<double>(find_value(*last_step_record, "step/train/box_loss")->simple_value) ==
            doctest::Approx(row.at("train/box_loss")).epsilon(1e-5));
    } else if (const auto* v = find_value(e, "results"); v != nullptr && v->has_image) {
      image = v;
    }
  }
  CHECK(epochs_seen == 3);
  CHECK(step_records == 12);
  REQUIRE(image != nullptr);
  const cv::Mat png = cv::imread(run_dir + "/results.png", cv::IMREAD_UNCHANGED);
  REQUIRE(!png.empty());
  const std::string& encoded = image->image.encoded;
  REQUIRE(encoded.size() > 8);
  CHECK(encoded.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0);
  const cv::Mat decoded =
      cv::imdecode(std::vector<unsigned char>(encoded.begin(), encoded.end()), cv::IMREAD_UNCHANGED);
  REQUIRE(!decoded.empty());
  CHECK(decoded.cols == png.cols);
  CHECK(decoded.rows == png.rows);
  CHECK(image->image.width == png.cols);
  CHECK(image->image.height == png.rows);
  CHECK(image->image.colorspace == png.channels());
  test::remove_tree(dir);
}

TEST_CASE("tensorboard monitor without a run folder warns and logs nothing; the run completes") {
  const std::string dir = test::temp_dir("tensorboard-no-run-dir");
  test::write_inspect_pipeline(dir, 1, R"([{"plugin": "tensorboard"}])");
  const auto res = test::run_cli("run " + dir + "/inspect.json");
  INFO(res.output);
  CHECK(res.exit_code == 0);
  CHECK(res.output.find("tensorboard: this run has no run folder and no log_dir is set; nothing is logged") !=
        std::string::npos);
  std::size_t event_files_found = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().filename().string().find("tfevents") != std::string::npos) ++event_files_found;
  }
  CHECK(event_files_found == 0);
  // Through the CLI, a log folder that cannot be made stops the run with its name.
  const auto bad = test::run_cli("run " + dir + "/inspect.json monitors.0.params.log_dir=" + dir + "/data.yaml/tb");
  CHECK(bad.exit_code != 0);
  CHECK(bad.output.find("cannot create the log folder '" + dir + "/data.yaml/tb'") != std::string::npos);
  test::remove_tree(dir);
}
