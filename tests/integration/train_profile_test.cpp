// What a training run writes for a user to look at: the step profile (`profile_every`: the
// phases of sampled steps in steps.csv, their per-epoch means in results.csv and the log) and
// the first batches drawn as train_batch0..2.jpg.
#include <doctest/doctest.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cmath>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/coco_subset.h"
#include "support/paths.h"
#include "support/run_cli.h"
#include "runtime/run/results_csv.h"
#include "training/step/step_profile.h"

using namespace yoloflow;

namespace {

std::vector<std::vector<double>> numeric_rows(const std::string& text, std::string* header) {
  std::istringstream in(text);
  std::getline(in, *header);
  std::vector<std::vector<double>> rows;
  for (std::string line; std::getline(in, line);) {
    std::vector<double> row;
    std::istringstream cells(line);
    for (std::string cell; std::getline(cells, cell, ',');) row.push_back(std::stod(cell));
    rows.push_back(row);
  }
  return rows;
}

}  // namespace

TEST_CASE("step profile: every Nth step sampled, the device waited for at each phase, means per epoch") {
  const auto dir = test::temp_dir("step-profile-unit");
  int syncs = 0;
  core::StepProfile profile(dir + "/steps.csv", 2, [&] { ++syncs; });
  for (int step = 0; step < 5; ++step) {
    const bool sampled = profile.begin(0, step, step, 0.004);
    CHECK(sampled == (step % 2 == 0));
    profile.end_phase(core::StepProfile::kHostToDevice);
    profile.end_phase(core::StepProfile::kForward);
    profile.end_phase(core::StepProfile::kBackward);
    profile.end_step();  // the optimizer phase not ended: it counts 0
  }
  CHECK(syncs == 3 * 4);  // 3 sampled steps: at the start and after each of 3 phases
  const auto means = profile.take_epoch_means();
  CHECK(means.at("profile/steps") == 3);
  CHECK(means.at("profile/data_wait_ms") == doctest::Approx(4.0));
  CHECK(means.at("profile/optimizer_ms") == 0);
  CHECK(profile.take_epoch_means().empty());  // reset for the next epoch
  std::string header;
  const auto rows = numeric_rows(test::read_file(dir + "/steps.csv"), &header);
  CHECK(header == "epoch,step,global_step,data_wait_ms,h2d_ms,forward_ms,backward_ms,optimizer_ms,total_ms");
  REQUIRE(rows.size() == 3);
  CHECK(rows[2][1] == 5);  // 1-based step
  CHECK(core::StepProfile::summary(means).find("step profile (3 sampled steps") != std::string::npos);

  core::StepProfile appended(dir + "/steps.csv", 1, [] {});  // a resumed run appends, one header
  appended.begin(1, 0, 9, 0.0);
  appended.end_step();
  appended.take_epoch_means();
  CHECK(numeric_rows(test::read_file(dir + "/steps.csv"), &header).size() == 4);
}

TEST_CASE("train writes steps.csv and phase means with profile_every, and its first batches as train_batch0..2.jpg") {
  const auto dir = test::temp_dir("step-profile-train");
  const auto data = test::write_coco128_subset(dir, 8);
  const auto run = dir + "/run";
  // 8 images, batch 2: 4 steps an epoch, 8 in all; every 3rd sampled: epoch 1 steps 1 and 4,
  // epoch 2 step 3.
  const auto r = test::train_coco128_cpu(data, run, "epochs=2 stages.train.params.profile_every=3");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  std::string header;
  const auto rows = numeric_rows(test::read_file(run + "/steps.csv"), &header);
  REQUIRE(rows.size() == 3);
  const double expected[3][2] = {{1, 1}, {1, 4}, {2, 3}};
  for (int i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(rows[i][0] == expected[i][0]);
    CHECK(rows[i][1] == expected[i][1]);
    double phases = 0;
    for (int c = 4; c <= 7; ++c) {
      CHECK(rows[i][c] >= 0);
      phases += rows[i][c];
    }
    CHECK(rows[i][5] > 0);  // forward + loss
    CHECK(rows[i][6] > 0);  // backward
    CHECK(rows[i][8] == doctest::Approx(phases).epsilon(0.01));
  }
  core::ResultsCsv results(run + "/results.csv");
  results.load();
  REQUIRE(results.rows().size() == 2);
  CHECK(results.rows()[0].at("profile/steps") == 2);
  CHECK(results.rows()[1].at("profile/steps") == 1);
  CHECK(results.rows()[0].at("profile/forward_ms") == doctest::Approx((rows[0][5] + rows[1][5]) / 2).epsilon(0.01));
  CHECK(results.rows()[1].at("profile/backward_ms") == doctest::Approx(rows[2][6]).epsilon(0.01));
  CHECK(r.output.find("epoch 1 step profile (2 sampled steps, mean ms): data wait") != std::string::npos);
  // The progress line has Ultralytics' Instances and Size: the last batch's labelled objects and
  // its image size.
  CHECK(std::regex_search(r.output, std::regex("epoch 2/2  step 4/4  box [0-9.]+  cls [0-9.]+  dfl [0-9.]+  instances [0-9]+  size 64  ")));

  // Ultralytics' train_batch0..2.jpg: the batch's 2 images of 64 px side by side (the drawing is
  // preview's, tested there); only the first three batches.
  for (int b = 0; b < 3; ++b) {
    CAPTURE(b);
    const cv::Mat grid = cv::imread(run + "/train_batch" + std::to_string(b) + ".jpg");
    REQUIRE_FALSE(grid.empty());
    CHECK(grid.cols == 128);
    CHECK(grid.rows == 64);
    cv::Scalar mean, stddev;
    cv::meanStdDev(grid, mean, stddev);
    CHECK(stddev[0] > 10);  // the photos, not an empty grey grid
  }
  CHECK(cv::imread(run + "/train_batch3.jpg").empty());
}

TEST_CASE("train on a terminal: the epoch's bar stays on the last line, the log lines above it; never in a pipe") {
  const auto dir = test::temp_dir("status-line");
  const auto data = test::write_coco128_subset(dir, 8);
  // `script` runs the command on a pseudo-terminal, as a user's shell would.
  const auto command = [&](const std::string& run) {
    return "OMP_NUM_THREADS=1 " + test::cli() + " train " + test::coco128_cpu_pipeline(data) + " --run-dir " + run +
           " device=cpu imgsz=64 workers=1 stages.batch.params.batch=2 stages.train.params.val_every=0 "
           "stages.train.params.log_every=2 epochs=1";
  };
  const auto tty = test::run_shell("script -qfec '" + command(dir + "/tty") + "' /dev/null");
  INFO(tty.output);
  REQUIRE(tty.exit_code == 0);
  // Drawn in place ("\r" ... erase to the end of the line): a bar, the step, instances and size.
  CHECK(std::regex_search(tty.output, std::regex("\\repoch 1/1 (\u2501|\u2500){20} [1-4]/4  .*instances [0-9]+  size 64  .*ETA [0-9:]+\x1b\\[K")));
  // A progress line logged meanwhile clears the bar first and it is drawn again after it.
  CHECK(tty.output.find("\r\x1b[K\x1b[32m[") != std::string::npos);
  CHECK(tty.output.find("step 2/4") != std::string::npos);
  // In a pipe (a CI log, a file) there is no bar at all, only the progress lines.
  const auto piped = test::run_shell(command(dir + "/piped"));
  REQUIRE(piped.exit_code == 0);
  CHECK(piped.output.find("step 2/4") != std::string::npos);
  CHECK(piped.output.find("\u2500") == std::string::npos);
  CHECK(piped.output.find("\x1b[K") == std::string::npos);
}
