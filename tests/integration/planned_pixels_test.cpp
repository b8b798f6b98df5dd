// Pixels composed from plans (yoloflow/pixel_plan.h, the train sink's augment_on): the same
// bytes as the CPU plugins make, the same boxes, the same training; a chain that cannot be
// planned is refused in one line when the device must compose, and made by the workers otherwise.
// The host composer runs here; the CUDA kernel runs the same arithmetic (composed_pixel.h), and
// bench/gpu/planned-pixels.sh compares the two on the GPU machine.
#include <doctest/doctest.h>

#include <opencv2/imgproc.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/graph/stage_sample_loaders.h"
#include "runtime/plugin/plugin_manager.h"
#include "runtime/run/results_csv.h"
#include "support/coco_subset.h"
#include "support/paths.h"
#include "support/planned_batches.h"
#include "support/plugins.h"
#include "support/run_cli.h"
#include "training/compose/augment_placement.h"
#include "training/compose/pixel_composer.h"
#include "yoloflow/augmentation.h"
#include "yoloflow/pixel_plan.h"
#include "yoloflow/source.h"

using namespace yoloflow;

namespace {


cv::Mat random_image(std::mt19937& g, int w, int h) {
  cv::Mat m(h, w, CV_8UC3);
  cv::randu(m, 0, 256);
  // Smooth regions too: flat colours are where rounding shows.
  cv::rectangle(m, cv::Rect(0, 0, w / 2 + 1, h / 3 + 1), cv::Scalar(g() % 256, g() % 256, g() % 256), cv::FILLED);
  return m;
}

}  // namespace

TEST_CASE("planned pixels: tiles, warps, colours and flips composed as cv::resize, cv::warpAffine, the hsv plugin's tables and cv::flip") {
  std::mt19937 g(7);
  long long bytes = 0, wrong = 0;
  for (int round = 0; round < 60; ++round) {
    PixelPlan plan;
    // Training images are multiples of 32 wide: OpenCV converts such rows from HSV with its
    // vector code alone, whose colours the tables hold (its scalar code for the last pixels of
    // other widths rounds some colours otherwise).
    plan.width = 32 * (1 + static_cast<int>(g() % 10));
    plan.height = 16 + static_cast<int>(g() % 300);
    plan.fill = static_cast<std::uint8_t>(g() % 256);
    cv::Mat expected(plan.height, plan.width, CV_8UC3, cv::Scalar::all(plan.fill));
    const int tiles = 1 + static_cast<int>(g() % 4);
    for (int t = 0; t < tiles; ++t) {
      const cv::Mat source = random_image(g, 1 + static_cast<int>(g() % 400), 1 + static_cast<int>(g() % 400));
      const int fx = static_cast<int>(g() % source.cols), fy = static_cast<int>(g() % source.rows);
      const cv::Rect from(fx, fy, 1 + static_cast<int>(g() % (source.cols - fx)),
                          1 + static_cast<int>(g() % (source.rows - fy)));
      const int tx = static_cast<int>(g() % plan.width), ty = static_cast<int>(g() % plan.height);
      const cv::Rect to(tx, ty, 1 + static_cast<int>(g() % (plan.width - tx)),
                        1 + static_cast<int>(g() % (plan.height - ty)));
      plan.tiles.push_back(ResizedTile{source, from, to});
      cv::Mat roi = expected(to);
      cv::resize(source(from), roi, to.size(), 0, 0, cv::INTER_LINEAR);
    }
    if (round % 3 == 1) {
      // The tiles make a canvas, which an affine matrix warps into an output of another size.
      PixelPlan warped = plan;
      warped.warped = true;
      warped.warp.canvas_width = plan.width;
      warped.warp.canvas_height = plan.height;
      warped.warp.border = static_cast<std::uint8_t>(g() % 256);
      std::uniform_real_distribution<double> u(-1.0, 1.0);
      const double scale = std::exp(0.6 * u(g)), angle = round % 2 == 0 ? 0.4 * u(g) : 0.0;
      warped.warp.matrix = cv::Matx23d(scale * std::cos(angle), -scale * std::sin(angle) + 0.1 * u(g), 80 * u(g),
                                       scale * std::sin(angle), scale * std::cos(angle), 80 * u(g));
      warped.width = 32 * (1 + static_cast<int>(g() % 10));
      warped.height = 16 + static_cast<int>(g() % 300);
      cv::Mat out;
      cv::warpAffine(expected, out, cv::Mat(warped.warp.matrix), cv::Size(warped.width, warped.height), cv::INTER_LINEAR,
                     cv::BORDER_CONSTANT, cv::Scalar::all(warped.warp.border));
      expected = out;
      plan = warped;
    }
    if (round % 2 == 0) {
      // The hsv plugin's procedure: BGR -> HSV, a table per channel, back.
      plan.hsv = true;
      std::vector<cv::Mat> tables;
      for (int c = 0; c < 3; ++c) {
        cv::Mat lut(1, 256, CV_8U);
        for (int x = 0; x < 256; ++x) {
          const int v = c == 0 ? (x + static_cast<int>(g() % 180)) % 180 : std::min(255, x * (50 + static_cast<int>(g() % 100)) / 100);
          lut.at<std::uint8_t>(x) = static_cast<std::uint8_t>(v);
          plan.hsv_tables[static_cast<std::size_t>(256 * c + x)] = static_cast<std::uint8_t>(v);
        }
        tables.push_back(lut);
      }
      cv::Mat hsv;
      cv::cvtColor(expected, hsv, cv::COLOR_BGR2HSV);
      std::vector<cv::Mat> channels;
      cv::split(hsv, channels);
      for (int c = 0; c < 3; ++c) cv::LUT(channels[static_cast<std::size_t>(c)], tables[static_cast<std::size_t>(c)],
                                          channels[static_cast<std::size_t>(c)]);
      cv::merge(channels, hsv);
      cv::cvtColor(hsv, expected, cv::COLOR_HSV2BGR);
    }
    plan.flip_lr = g() % 2 == 0;
    plan.flip_ud = g() % 3 == 0;
    if (plan.flip_ud) cv::flip(expected, expected, 0);
    if (plan.flip_lr) cv::flip(expected, expected, 1);
    wrong += test::differing_bytes(test::composed_bgr(plan), expected);
    bytes += static_cast<long long>(expected.total()) * 3;
  }
  INFO(wrong << " of " << bytes << " bytes differ");
  CHECK(wrong == 0);
}

TEST_CASE("planned pixels: the planned coco128 chains give the CPU chains' boxes and bytes") {
  core::PluginManager pm;
  // The fused chain, and Ultralytics' mosaic then random_perspective (with rotation and shear too).
  for (const std::string chain : {"fused", "two-stage", "two-stage rotated"}) {
    for (const bool mosaic : {true, false}) {
      const int imgsz = mosaic ? 640 : 320;
      test::ComponentSetup setup;
      setup.imgsz = imgsz;
      auto source = test::coco128_train_source(pm, setup);
      std::vector<std::unique_ptr<Augmentation>> stages;
      if (chain == "fused") {
        stages.push_back(test::make_component<Augmentation>(pm, Kind::Augmentation, "mosaic_perspective",
                                                            {{"p", mosaic ? 1.0 : 0.0}, {"others", "any"}}, setup));
      } else {
        stages.push_back(test::make_component<Augmentation>(pm, Kind::Augmentation, "mosaic",
                                                            {{"p", mosaic ? 1.0 : 0.0}, {"others", "any"}}, setup));
        json warp = chain == "two-stage" ? json::object() : json{{"degrees", 10.0}, {"shear", 5.0}};
        stages.push_back(test::make_component<Augmentation>(pm, Kind::Augmentation, "random_perspective", warp, setup));
      }
      stages.push_back(test::make_component<Augmentation>(pm, Kind::Augmentation, "hsv", json::object(), setup));
      stages.push_back(test::make_component<Augmentation>(pm, Kind::Augmentation, "flip", {{"flipud", 0.3}}, setup));
      const std::vector<Augmentation*> augs = test::planning_chain(stages);
      core::StageSampleLoaders loaders(*source, augs, /*epoch_seed=*/11, imgsz, 0);
      long long wrong = 0;
      for (std::size_t i = 0; i < 8; ++i) {
        CAPTURE(chain);
        CAPTURE(mosaic);
        wrong += test::made_against_planned(loaders, augs.size(), i * 7, 1000 + i);
      }
      INFO(wrong << " bytes differ (" << chain << ", mosaic " << mosaic << ")");
      CHECK(wrong == 0);
    }
  }
  // The fused stage warps rotation on the CPU only, random_perspective perspective: each says so.
  auto rotating = test::make_component<Augmentation>(pm, Kind::Augmentation, "mosaic_perspective",
                                                     {{"degrees", 10.0}}, {});
  REQUIRE(rotating->plan_support() != nullptr);
  CHECK(std::string(rotating->plan_support()).find("degrees") != std::string::npos);
  auto projective = test::make_component<Augmentation>(pm, Kind::Augmentation, "random_perspective",
                                                       {{"perspective", 0.0005}}, {});
  REQUIRE(projective->plan_support() != nullptr);
  CHECK(std::string(projective->plan_support()).find("perspective") != std::string::npos);
}

TEST_CASE("planned pixels: letterbox chains give the CPU chains' boxes and bytes") {
  core::PluginManager pm;
  struct Chain {
    std::string name;
    json letterbox;
    bool perspective;
  };
  // Padding only (the source already fitted the long side), a resize into a smaller square, a
  // rectangle with stride padding, padding at the right and bottom without enlarging, and
  // Ultralytics' path without mosaic: letterbox then its warp. Outputs are multiples of 32 wide,
  // as training sizes are (the colour tables' limit, in the first test case).
  const std::vector<Chain> chains = {{"pad only", json::object(), false},
                                     {"resized", {{"size", 224}}, false},
                                     {"rectangle, auto", {{"height", 192}, {"width", 256}, {"auto", true}}, false},
                                     {"top-left, no scaleup", {{"size", 416}, {"center", false}, {"scaleup", false}}, false},
                                     {"then random_perspective", json::object(), true}};
  for (const Chain& chain : chains) {
    CAPTURE(chain.name);
    test::ComponentSetup setup;
    setup.imgsz = 320;
    auto source = test::coco128_train_source(pm, setup);
    std::vector<std::unique_ptr<Augmentation>> stages;
    stages.push_back(test::make_component<Augmentation>(pm, Kind::Augmentation, "letterbox", chain.letterbox, setup));
    if (chain.perspective) {
      stages.push_back(test::make_component<Augmentation>(pm, Kind::Augmentation, "random_perspective",
                                                          {{"degrees", 10.0}}, setup));
    }
    stages.push_back(test::make_component<Augmentation>(pm, Kind::Augmentation, "hsv", json::object(), setup));
    stages.push_back(test::make_component<Augmentation>(pm, Kind::Augmentation, "flip", {{"flipud", 0.3}}, setup));
    const std::vector<Augmentation*> augs = test::planning_chain(stages);
    core::StageSampleLoaders loaders(*source, augs, /*epoch_seed=*/5, setup.imgsz, 0);
    long long wrong = 0;
    for (std::size_t i = 0; i < 8; ++i) wrong += test::made_against_planned(loaders, augs.size(), i * 13, 300 + i);
    CHECK(wrong == 0);
  }
  // After planned pixel work the letterbox has nothing whole to resize: refused, naming itself.
  test::ComponentSetup setup;
  setup.imgsz = 320;
  auto source = test::coco128_train_source(pm, setup);
  auto mosaic = test::make_component<Augmentation>(pm, Kind::Augmentation, "mosaic", {{"others", "any"}}, setup);
  auto letterbox = test::make_component<Augmentation>(pm, Kind::Augmentation, "letterbox", json::object(), setup);
  core::StageSampleLoaders loaders(*source, {mosaic.get(), letterbox.get()}, 5, setup.imgsz, 0);
  Sample s = loaders.load_source(0);
  Rng rng(1);
  CHECK_THROWS_WITH(loaders.apply(s, rng, 2, {}, /*plan_pixels=*/true),
                    doctest::Contains("already has planned pixels; a planned letterbox comes right after the source"));
  // A grey image (a source of its own making) cannot be planned: refused, naming the sample.
  Sample grey;
  grey.path = "grey.png";
  grey.image = cv::Mat(48, 64, CV_8UC1, cv::Scalar(7));
  core::StageSampleLoaders letterbox_only(*source, {letterbox.get()}, 5, setup.imgsz, 0);
  CHECK_THROWS_WITH(letterbox_only.apply(grey, rng, 1, {}, /*plan_pixels=*/true),
                    doctest::Contains("sample 'grey.png' has no 8-bit BGR image to plan from"));
}

namespace {

// The coco128 subset's training through mosaic_perspective, hsv and flip, on the CPU.
std::string write_planned_pipeline(const std::string& dir) {
  const std::string path = dir + "/pipeline.json";
  test::write_file(path, R"({
  "name": "planned", "epochs": 2, "imgsz": 64, "seed": 0, "ordered": true, "device": "cpu", "workers": 1,
  "stages": {
    "source": {"plugin": "yolo_dataset", "params": {"data": "data.yaml", "split": "train"}},
    "mosaic_perspective": {"plugin": "mosaic_perspective", "input": "source", "params": {"p": {"steps": {"0": 1.0, "-1": 0.0}}}},
    "hsv": {"plugin": "hsv", "input": "mosaic_perspective"},
    "flip": {"plugin": "flip", "input": "hsv"},
    "batch": {"plugin": "collate", "input": "flip", "params": {"batch": 2}},
    "train": {"plugin": "train", "input": "batch", "params": {"data": "data.yaml", "model": {"plugin": "yolo11", "params": {"scale": "n"}},
      "precision": {"plugin": "fp32"}, "scheduler": {"plugin": "linear"}, "val_every": 0,
      "callbacks": [{"plugin": "train_batch_images", "params": {"batches": 4}}]}}
  }
})");
  return path;
}


}  // namespace

TEST_CASE("train augment_on device: the same losses as the workers' pixels, pictures of the first batches") {
  const auto dir = test::temp_dir("planned-train");
  test::write_coco128_subset(dir, 8);
  const std::string pipeline = write_planned_pipeline(dir);
  std::vector<std::vector<double>> losses;
  for (const std::string where : {"workers", "device"}) {
    const std::string run = dir + "/run-" + where;
    const auto r = test::run_cli("train " + pipeline + " --run-dir " + run + " stages.train.params.augment_on=" + where,
                                 "OMP_NUM_THREADS=1 ");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    if (where == "device") {
      CHECK(r.output.find("augmentations composed on the training device") != std::string::npos);
    }
    losses.push_back(test::epoch_losses(run));
    CHECK(test::read_file(run + "/train_batch0.jpg").size() > 1000);
    // A fourth picture asked for: the device's composed pixels are copied back for the first three
    // batches only, so it is left out with a warning and the run goes on.
    if (where == "device") {
      CHECK_FALSE(std::filesystem::exists(run + "/train_batch3.jpg"));
      CHECK(r.output.find("were not copied back (only the first 3 batches of an epoch are)") != std::string::npos);
    } else {
      CHECK(std::filesystem::exists(run + "/train_batch3.jpg"));
    }
  }
  // Identical pixels and boxes: identical training, to the printed digit.
  CHECK(losses[0] == losses[1]);

  // Stopped on the device mid-run, resumed on the workers: the uninterrupted run's losses.
  const std::string run = dir + "/run-moved";
  const auto first = test::run_cli("train " + pipeline + " --run-dir " + run +
                                       " stages.train.params.augment_on=device stages.train.params.max_steps=6",
                                   "OMP_NUM_THREADS=1 ");
  INFO(first.output);
  REQUIRE(first.exit_code == 0);
  const auto resumed =
      test::run_cli("train --resume " + run + " stages.train.params.augment_on=workers", "OMP_NUM_THREADS=1 ");
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK(test::epoch_losses(run) == losses[0]);
}

TEST_CASE("train augment_on device: a letterbox chain (no mosaic) trains as on the workers") {
  const auto dir = test::temp_dir("planned-letterbox-train");
  test::write_coco128_subset(dir, 6);
  const std::string pipeline = test::write_chain_pipeline(
      dir, {{"letterbox", "letterbox"}, {"perspective", "random_perspective"}, {"hsv", "hsv"}, {"flip", "flip"}});
  const auto losses = test::losses_on_both_paths(pipeline, dir);
  CHECK(losses[0].size() == 6);
  CHECK(losses[0] == losses[1]);
}

TEST_CASE("train augment_on device: rectangular batches (rect=True) train as on the workers") {
  const auto dir = test::temp_dir("planned-rect-train");
  const std::string data = test::write_coco128_subset(dir, 8);
  std::vector<std::vector<double>> losses;
  for (const std::string where : {"workers", "device"}) {
    const std::string run = dir + "/run-" + where;
    const auto r = test::run_cli("train data=" + data + " model=yolo11n.yaml imgsz=128 batch=2 epochs=2 rect=True val=False "
                                 "workers=1 device=cpu stages.train.params.augment_on=" + where + " --run-dir " + run,
                                 "OMP_NUM_THREADS=1 ");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    // Each batch its own shape: the plans are composed at the batch's height and width.
    CHECK(r.output.find("shapes from 96x128 to 128x128") != std::string::npos);
    if (where == "device") CHECK(r.output.find("augmentations composed on the training device") != std::string::npos);
    losses.push_back(test::epoch_losses(run));
  }
  CHECK(losses[0].size() == 6);
  CHECK(losses[0] == losses[1]);
}

TEST_CASE("train augment_on device: the shipped chain trains as on the workers; one that cannot be planned is refused") {
  const auto dir = test::temp_dir("planned-refused");
  const auto data = test::write_coco128_subset(dir, 4);
  const auto run = dir + "/run";
  // Perspective is warped on the CPU only.
  const auto refused = test::train_coco128_cpu(
      data, run, "epochs=1 stages.train.params.augment_on=device stages.perspective.params.perspective=0.0005");
  INFO(refused.output);
  CHECK(refused.exit_code == 2);
  CHECK(refused.output.find("augment_on device: epoch 1 cannot compose its augmentations on the training device: "
                            "stage 'perspective'") != std::string::npos);
  const auto automatic = test::train_coco128_cpu(data, run + "-auto", "epochs=1");
  INFO(automatic.output);
  CHECK(automatic.exit_code == 0);
  CHECK(automatic.output.find("augment_on device") == std::string::npos);
  // The shipped chain (mosaic, random_perspective, hsv, flip) planned: the workers' training.
  const auto planned = test::train_coco128_cpu(data, run + "-device", "epochs=1 stages.train.params.augment_on=device");
  INFO(planned.output);
  REQUIRE(planned.exit_code == 0);
  CHECK(planned.output.find("augmentations composed on the training device") != std::string::npos);
  const std::vector<double> losses = test::epoch_losses(run + "-device");
  CHECK(losses.size() == 3);
  CHECK(losses == test::epoch_losses(run + "-auto"));
}

TEST_CASE("planned pixels on CUDA: the kernel composes the host's bytes") {
  const torch::Device cuda(torch::kCUDA, 0);
  if (!test::composes_on_cuda(cuda)) return;
  core::PluginManager pm;
  test::ComponentSetup setup;
  setup.imgsz = 640;
  auto source = test::coco128_train_source(pm, setup);
  auto hsv = test::make_component<Augmentation>(pm, Kind::Augmentation, "hsv", json::object(), setup);
  auto flip = test::make_component<Augmentation>(pm, Kind::Augmentation, "flip", {{"flipud", 0.3}}, setup);
  // The fused chain (resized tiles) and the two-stage one with rotation and shear (a warped canvas).
  for (const bool fused : {true, false}) {
    CAPTURE(fused);
    std::vector<std::unique_ptr<Augmentation>> geometry;
    if (fused) {
      geometry.push_back(
          test::make_component<Augmentation>(pm, Kind::Augmentation, "mosaic_perspective", {{"others", "any"}}, setup));
    } else {
      geometry.push_back(test::make_component<Augmentation>(pm, Kind::Augmentation, "mosaic", {{"others", "any"}}, setup));
      geometry.push_back(test::make_component<Augmentation>(pm, Kind::Augmentation, "random_perspective",
                                                            {{"degrees", 10.0}, {"shear", 5.0}}, setup));
    }
    std::vector<Augmentation*> chain;
    for (auto& a : geometry) chain.push_back(a.get());
    chain.push_back(hsv.get());
    chain.push_back(flip.get());
    core::StageSampleLoaders loaders(*source, chain, 5, 640, 0);
    std::vector<cv::Mat> made;
    const Batch batch = test::planned_batch(loaders, chain.size(), 16, 640, &made);
    const auto planned = batch.planned;
    core::PixelComposer composer(cuda);
    const torch::Tensor on_gpu = composer.compose(batch).cpu();
    // Its images stay on the device: composing again uploads nothing and gives the same bytes.
    CHECK(composer.kept_images() == planned->sources.size());
    CHECK(torch::equal(composer.compose(batch).cpu(), on_gpu));
    torch::Tensor on_host = torch::empty({16, 640, 640, 3}, torch::kUInt8);
    core::compose_on_host(*planned, 16, 640, 640, on_host.data_ptr<std::uint8_t>());
    CHECK(torch::equal(on_gpu, on_host));
    // And against this machine's OpenCV, through the CPU plugins (its build's resize may round otherwise).
    long long wrong = 0, worst = 0;
    double sum = 0;
    for (std::size_t k = 0; k < made.size(); ++k) {
      cv::Mat rgb;
      cv::cvtColor(made[k], rgb, cv::COLOR_BGR2RGB);
      const cv::Mat gpu(640, 640, CV_8UC3, on_gpu[static_cast<std::int64_t>(k)].data_ptr<std::uint8_t>());
      cv::Mat diff;
      cv::absdiff(rgb.reshape(1), gpu.reshape(1), diff);
      wrong += cv::countNonZero(diff);
      double lo = 0, hi = 0;
      cv::minMaxLoc(diff, &lo, &hi);
      worst = std::max(worst, static_cast<long long>(hi));
      sum += cv::sum(diff)[0];
    }
    MESSAGE(std::string(fused ? "fused" : "two-stage") << " chain, GPU against the CPU plugins: " << wrong << " of "
                                            << 16LL * 640 * 640 * 3 << " bytes differ, mean "
                                            << sum / (16.0 * 640 * 640 * 3) << ", max " << worst);
    CHECK(sum / (16.0 * 640 * 640 * 3) <= 1.0);
  }
}

TEST_CASE("augment_on auto: on the device at once with few workers, else once an epoch waited for data") {
  const torch::Device cpu(torch::kCPU);
  // Where the device composes with its own kernel.
  core::AugmentPlacement few("auto", cpu, 3, /*composes=*/true);
  CHECK(few.on_device());
  core::AugmentPlacement many("auto", cpu, 14, true);
  CHECK_FALSE(many.on_device());
  REQUIRE(many.composer() != nullptr);
  many.waited(4.0);
  many.epoch_ended(0, 100.0);  // 4% of the epoch: the step kept the pace
  CHECK_FALSE(many.on_device());
  many.waited(30.0);
  many.epoch_ended(1, 100.0);  // 30%: data-bound
  CHECK(many.on_device());
  // Elsewhere auto keeps the workers; the explicit settings hold whatever the waits.
  core::AugmentPlacement elsewhere("auto", cpu, 3, /*composes=*/false);
  CHECK_FALSE(elsewhere.on_device());
  CHECK(elsewhere.composer() == nullptr);
  core::AugmentPlacement workers("workers", cpu, 3, true);
  workers.waited(90.0);
  workers.epoch_ended(0, 100.0);
  CHECK_FALSE(workers.on_device());
  CHECK(core::AugmentPlacement("device", cpu, 14, false).on_device());
}

TEST_CASE("device image cache with augment_on auto: it opens only once pixels are composed on the device") {
  const torch::Device cpu(torch::kCPU);
  core::AugmentPlacement many("auto", cpu, 14, /*composes=*/true, /*image_cache=*/"on");
  REQUIRE(many.kept_images() != nullptr);
  many.epoch_ended(0, 100.0);  // the step kept the pace: the workers make the pixels
  many.kept_images_epoch_end(8, 64);
  CHECK_FALSE(many.kept_images()->opened());  // its memory would be lost to the run
  many.waited(30.0);
  many.epoch_ended(1, 100.0);  // data-bound: composed on the device from the next epoch
  many.kept_images_epoch_end(8, 64);
  REQUIRE(many.kept_images()->opened());
  CHECK(many.kept_images()->bytes_reserved() == core::DeviceImageStore::bytes_for(8, 64));
}
