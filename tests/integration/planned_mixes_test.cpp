// Mixes in pixel plans (yoloflow/pixel_plan.h: mixup's blend, cutmix's paste): composed as
// cv::addWeighted and a rectangle's copy, nested as mixup then cutmix nest them, and the planned
// coco128 chains with mixup and cutmix give the CPU chains' boxes and bytes.
#include <doctest/doctest.h>

#include <opencv2/imgproc.hpp>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/graph/stage_sample_loaders.h"
#include "runtime/plugin/plugin_manager.h"
#include "support/coco_subset.h"
#include "support/paths.h"
#include "support/planned_batches.h"
#include "support/plugins.h"
#include "support/run_cli.h"
#include "training/compose/pixel_composer.h"
#include "yoloflow/augmentation.h"
#include "yoloflow/error.h"
#include "yoloflow/pixel_plan.h"
#include "yoloflow/source.h"

using namespace yoloflow;

namespace {


// A sample whose pixels are a random image of w x h.
Sample random_sample(std::mt19937& g, int w, int h) {
  Sample s;
  s.image = cv::Mat(h, w, CV_8UC3);
  cv::randu(s.image, 0, 256);
  cv::rectangle(s.image, cv::Rect(0, 0, w / 3 + 1, h / 2 + 1), cv::Scalar(g() % 256, g() % 256, g() % 256), cv::FILLED);
  return s;
}

}  // namespace

TEST_CASE("planned mixes: blends as cv::addWeighted, pastes as a rectangle's copy, nested") {
  std::mt19937 g(3);
  std::uniform_real_distribution<double> u(0.3, 0.7);
  long long wrong = 0, bytes = 0;
  for (int round = 0; round < 40; ++round) {
    const int w = 32 * (1 + static_cast<int>(g() % 20)), h = 8 + static_cast<int>(g() % 200);
    Sample a = random_sample(g, w, h), b = random_sample(g, w, h), c = random_sample(g, w, h);
    const cv::Mat pa = a.image.clone(), pb = b.image.clone(), pc = c.image.clone();
    const double r = u(g), r2 = u(g);
    const int x = static_cast<int>(g() % w), y = static_cast<int>(g() % h);
    const cv::Rect rect(x, y, 1 + static_cast<int>(g() % (w - x)), 1 + static_cast<int>(g() % (h - y)));
    // a blended with b (mixup), then c blended with a copy of a... as cutmix after mixup nests them:
    // c = paste of (a blended with b) inside rect.
    cv::Mat ab;
    cv::addWeighted(pa, r, pb, 1.0 - r, 0.0, ab);
    mix_in(a, b, false, r, cv::Rect());
    if (round % 2 == 0) {
      cv::Mat expected = pc.clone();
      ab(rect).copyTo(expected(rect));
      mix_in(c, a, true, 0.0, rect);
      wrong += test::differing_bytes(test::composed_bgr(*c.pixel_plan), expected);
      bytes += static_cast<long long>(expected.total()) * 3;
    } else {
      // Blended again: the blend of a blend.
      cv::Mat expected;
      cv::addWeighted(pc, r2, ab, 1.0 - r2, 0.0, expected);
      mix_in(c, a, false, r2, cv::Rect());
      wrong += test::differing_bytes(test::composed_bgr(*c.pixel_plan), expected);
      bytes += static_cast<long long>(expected.total()) * 3;
    }
  }
  INFO(wrong << " of " << bytes << " bytes differ");
  CHECK(wrong == 0);

  // Refused: another size, a rectangle outside, a mix after colours.
  Sample a = random_sample(g, 64, 32), b = random_sample(g, 32, 32);
  CHECK_THROWS_WITH_AS(mix_in(a, b, false, 0.5, cv::Rect()), "cannot mix a 32x32 image into a 64x32 one", Error);
  Sample c = random_sample(g, 64, 32);
  CHECK_THROWS_AS(mix_in(a, c, true, 0.0, cv::Rect(40, 0, 30, 10)), Error);
  plan_of(a).hsv = true;
  Sample d = random_sample(g, 64, 32);
  CHECK_THROWS_AS(mix_in(a, d, false, 0.5, cv::Rect()), Error);
}

TEST_CASE("planned mixes: the coco128 chains with mixup and cutmix give the CPU chains' boxes and bytes") {
  core::PluginManager pm;
  // Ultralytics' order (mosaic and its warp, mixup, cutmix, colours, flips), and mixup first, where
  // the other sample, another size, is fitted in its plan.
  for (const std::string chain : {"mosaic mixup cutmix", "mixup first"}) {
    CAPTURE(chain);
    const int imgsz = 320;
    test::ComponentSetup setup;
    setup.imgsz = imgsz;
    auto source = test::coco128_train_source(pm, setup);
    std::vector<std::unique_ptr<Augmentation>> stages;
    if (chain == "mosaic mixup cutmix") {
      stages.push_back(test::make_component<Augmentation>(pm, Kind::Augmentation, "mosaic_perspective",
                                                          {{"others", "any"}}, setup));
      stages.push_back(test::make_component<Augmentation>(pm, Kind::Augmentation, "mixup", {{"p", 1.0}}, setup));
      stages.push_back(test::make_component<Augmentation>(pm, Kind::Augmentation, "cutmix", {{"p", 1.0}}, setup));
    } else {
      stages.push_back(test::make_component<Augmentation>(pm, Kind::Augmentation, "mixup", {{"p", 1.0}}, setup));
    }
    // Colours where the images are multiples of 32 wide, as a batch's are (the composer's HSV
    // tables hold OpenCV's vector code's colours; its scalar code rounds a row's last pixels of
    // other widths otherwise): not on mixup-first's images, each its own size.
    if (chain != "mixup first") {
      stages.push_back(test::make_component<Augmentation>(pm, Kind::Augmentation, "hsv", json::object(), setup));
    }
    stages.push_back(test::make_component<Augmentation>(pm, Kind::Augmentation, "flip", {{"flipud", 0.3}}, setup));
    const std::vector<Augmentation*> augs = test::planning_chain(stages);
    core::StageSampleLoaders loaders(*source, augs, /*epoch_seed=*/11, imgsz, 0);
    long long wrong = 0;
    int mixed = 0;
    for (std::size_t i = 0; i < 10; ++i) {
      std::shared_ptr<const PixelPlan> plan;
      wrong += test::made_against_planned(loaders, augs.size(), i * 5, 2000 + i, &plan);
      mixed += plan->mixes.empty() ? 0 : 1;
    }
    CHECK(mixed == 10);  // mixup at p = 1: every image blends another in
    INFO(wrong << " bytes differ");
    CHECK(wrong == 0);
  }
}

TEST_CASE("train augment_on device with mixup and cutmix: the workers' losses") {
  const auto dir = test::temp_dir("planned-mixes-train");
  test::write_coco128_subset(dir, 8);
  const std::string pipeline = test::write_chain_pipeline(dir,
                                                          {{"mosaic_perspective", "mosaic_perspective"},
                                                           {"mixup", "mixup", {{"p", 0.5}}},
                                                           {"cutmix", "cutmix", {{"p", 0.5}}},
                                                           {"hsv", "hsv"},
                                                           {"flip", "flip"}},
                                                          /*workers=*/2);
  const auto losses = test::losses_on_both_paths(pipeline, dir);
  CHECK(losses[0].size() == 6);
  CHECK(losses[0] == losses[1]);
}

TEST_CASE("planned mixes on CUDA: the kernel composes the host's bytes") {
  const torch::Device cuda(torch::kCUDA, 0);
  if (!test::composes_on_cuda(cuda)) return;
  core::PluginManager pm;
  test::ComponentSetup setup;
  setup.imgsz = 640;
  auto source = test::coco128_train_source(pm, setup);
  std::vector<std::unique_ptr<Augmentation>> stages;
  stages.push_back(
      test::make_component<Augmentation>(pm, Kind::Augmentation, "mosaic_perspective", {{"others", "any"}}, setup));
  stages.push_back(test::make_component<Augmentation>(pm, Kind::Augmentation, "mixup", {{"p", 1.0}}, setup));
  stages.push_back(test::make_component<Augmentation>(pm, Kind::Augmentation, "cutmix", {{"p", 1.0}}, setup));
  stages.push_back(test::make_component<Augmentation>(pm, Kind::Augmentation, "hsv", json::object(), setup));
  stages.push_back(test::make_component<Augmentation>(pm, Kind::Augmentation, "flip", {{"flipud", 0.3}}, setup));
  std::vector<Augmentation*> chain;
  for (auto& a : stages) chain.push_back(a.get());
  core::StageSampleLoaders loaders(*source, chain, 5, 640, 0);
  std::vector<cv::Mat> made;
  const Batch batch = test::planned_batch(loaders, chain.size(), 16, 640, &made);
  CHECK(batch.planned->mixes.size() >= 16);
  core::PixelComposer composer(cuda);
  const torch::Tensor on_gpu = composer.compose(batch).cpu();
  torch::Tensor on_host = torch::empty({16, 640, 640, 3}, torch::kUInt8);
  core::compose_on_host(*batch.planned, 16, 640, 640, on_host.data_ptr<std::uint8_t>());
  CHECK(torch::equal(on_gpu, on_host));
  long long wrong = 0;
  for (std::size_t k = 0; k < made.size(); ++k) {
    cv::Mat rgb;
    cv::cvtColor(made[k], rgb, cv::COLOR_BGR2RGB);
    const cv::Mat gpu(640, 640, CV_8UC3, on_gpu[static_cast<std::int64_t>(k)].data_ptr<std::uint8_t>());
    wrong += test::differing_bytes(rgb, gpu);
  }
  MESSAGE("mosaic, mixup, cutmix, hsv, flip: GPU against the CPU plugins: " << wrong << " of " << 16LL * 640 * 640 * 3
                                                                            << " bytes differ");
  CHECK(wrong == 0);
}
