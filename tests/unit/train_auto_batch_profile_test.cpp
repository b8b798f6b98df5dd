// Auto batch's profiling loop (training/autobatch/auto_batch_profiler.h) on the CPU with the real YOLO11n,
// fp32 strategy and loss: each profiled batch runs a real forward + loss + backward before it is
// measured, gradients are gone afterwards, and an allocation failure ends the profile with the
// batches measured so far. (The CUDA measurement itself, peak reserved bytes, needs the GPU.)
// And the rows it pads the profiled targets to, from the pipeline's own augmented samples.
#include <doctest/doctest.h>

#include <new>

#include "runtime/pipeline/pipeline.h"
#include "runtime/words/pipeline_loading.h"
#include "runtime/plugin/plugin_manager.h"
#include "support/paths.h"
#include "support/plugins.h"
#include "training/autobatch/auto_batch_profiler.h"
#include "yoloflow/error.h"
#include "yoloflow/loss.h"
#include "yoloflow/model.h"
#include "yoloflow/precision.h"
#include "yoloflow/source.h"

using namespace yoloflow;

TEST_CASE("auto batch profile: real steps at each batch, measured after backward, stopping at out of memory") {
  core::PluginManager pm;
  auto model = test::make_component<Model>(pm, Kind::Model, "yolo11", {{"scale", "n"}, {"nc", 3}}, {64, "model"});
  auto fp32 = test::make_component<PrecisionStrategy>(pm, Kind::Precision, "fp32", json::object(),
                                                      {64, "precision", "precision_standard"});
  model->module().train();
  auto loss = test::make_component<Loss>(pm, Kind::Loss, "yolo11_detection", json::object(), {64, "loss"});
  loss->setup(model->head());
  const c10::Device cpu(c10::kCPU);
  int restarts = 0;
  std::vector<std::int64_t> measured;
  // What measure() sees: the step's gradients, all finite, some non-zero (a real backward ran).
  auto measure_step = [&]() -> double {
    double grad_norm = 0;
    bool finite = true;
    for (const auto& p : model->module().parameters()) {
      if (!p.requires_grad()) continue;  // the DFL projection is fixed
      REQUIRE(p.grad().defined());
      finite = finite && torch::isfinite(p.grad()).all().item<bool>();
      grad_norm += p.grad().norm().item<double>();
    }
    CHECK(finite);
    CHECK(grad_norm > 0);
    measured.push_back(static_cast<std::int64_t>(measured.size()));
    return 1e6 * static_cast<double>(measured.size());
  };
  auto profile = core::profile_step_memory(*model, *fp32, *loss, cpu, 64, 4, {1, 2}, [&] { ++restarts; }, measure_step);
  REQUIRE(profile.points.size() == 2);
  CHECK(profile.points[0].batch == 1);
  CHECK(profile.points[1].batch == 2);
  CHECK(profile.points[1].bytes == 2e6);
  CHECK(profile.oom_batch == 0);
  CHECK(restarts == 3);  // before each step and once after
  for (const auto& p : model->module().parameters()) CHECK_FALSE(p.grad().defined());

  // An allocation failure at batch 4 (as the CUDA allocator's at its cap): the profile ends
  // there with the batches before it, and the failed step's gradients are dropped.
  measured.clear();
  profile = core::profile_step_memory(*model, *fp32, *loss, cpu, 64, 4, {1, 4, 8}, [] {}, [&]() -> double {
    if (!measured.empty()) throw std::bad_alloc();
    return measure_step();
  });
  REQUIRE(profile.points.size() == 1);
  CHECK(profile.oom_batch == 4);
  for (const auto& p : model->module().parameters()) CHECK_FALSE(p.grad().defined());

  // Any other error is not an out-of-memory error: it propagates.
  CHECK_THROWS_AS(core::profile_step_memory(*model, *fp32, *loss, cpu, 64, 4, {1}, [] {},
                                            []() -> double { throw std::runtime_error("broken"); }),
                  std::runtime_error);
}

TEST_CASE("auto batch profile: a segmentation loss is profiled with the mask targets its batcher makes") {
  core::PluginManager pm;
  auto model = test::make_component<Model>(pm, Kind::Model, "yolo11", {{"scale", "n"}, {"nc", 3}, {"task", "segment"}},
                                           {64, "model"});
  auto fp32 = test::make_component<PrecisionStrategy>(pm, Kind::Precision, "fp32", json::object(),
                                                      {64, "precision", "precision_standard"});
  model->module().train();
  auto loss = test::make_component<Loss>(pm, Kind::Loss, "yolo11_segmentation", json::object(), {64, "loss"});
  loss->setup(model->head());
  const c10::Device cpu(c10::kCPU);
  // The batcher's parameters say which masks: none, per image at 1/4, per instance at 1/2.
  CHECK(core::profiled_masks(json{{"batch", 8}}).ratio == 0);
  const auto overlap = core::profiled_masks(json{{"masks", true}});
  CHECK(overlap.ratio == 4);
  CHECK(overlap.overlap);
  const auto separate = core::profiled_masks(json{{"masks", true}, {"overlap_mask", false}, {"mask_ratio", 2}});
  CHECK(separate.ratio == 2);
  CHECK_FALSE(separate.overlap);
  for (const auto& masks : {overlap, separate}) {
    CAPTURE(masks.overlap);
    double grad_norm = 0;
    const auto profile = core::profile_step_memory(*model, *fp32, *loss, cpu, 64, 3, {1, 2}, [] {}, [&]() -> double {
      for (const auto& p : model->module().parameters()) {
        if (p.grad().defined()) grad_norm += p.grad().norm().item<double>();
      }
      return 1.0;
    }, masks);
    CHECK(profile.points.size() == 2);
    CHECK(grad_norm > 0);
  }
  // Without the masks the segmentation loss cannot run a step: said, not taken for memory.
  CHECK_THROWS_WITH_AS(core::profile_step_memory(*model, *fp32, *loss, cpu, 64, 3, {1}, [] {}, [] { return 1.0; }),
                       doctest::Contains("the batch has no masks"), InvalidInput);
}

// What auto batch pads the profiled targets to: the densest image training will really see.
// Ultralytics' recipe on coco128: a mosaic sample holds boxes of four images, so the first
// epoch's densest sample carries more boxes than the densest image on disk; with mosaic off
// (close_mosaic's epochs) no sample gains boxes.
TEST_CASE("auto batch: the profiled rows come from augmented samples (mosaic) as training draws them") {
  core::PluginManager pm;
  pm.load_all();
  const std::string data = test::coco128_dir() + "/data.yaml";
  auto load = [&](std::vector<std::string> overrides) {
    overrides.insert(overrides.end(), {"imgsz=320", "stages.source.params.data=" + data,
                                       "stages.train.params.data=" + data, "stages.source.params.cache=ram"});
    auto loaded = core::load_pipeline(std::string(YOLOFLOW_SOURCE_DIR) + "/pipelines/train-coco128.json", overrides,
                                      pm.registry());
    REQUIRE_MESSAGE(loaded.ok(), core::format_diagnostics(loaded.diagnostics, "train-coco128.json"));
    return std::move(*loaded.pipeline);
  };
  const core::Pipeline mosaic = load({});
  const auto drawn = core::densest_augmented_boxes(mosaic, pm.registry(), 96);
  CHECK(drawn.sampled == 96);
  CHECK(drawn.samples == 128);
  CHECK(drawn.info.names.size() == 80);
  REQUIRE(drawn.info.max_boxes > 0);
  MESSAGE("densest image on disk: " << drawn.info.max_boxes << " boxes; densest of 96 mosaic samples: " << drawn.densest);
  CHECK(drawn.densest > drawn.info.max_boxes);
  // The same samples again (each position's own generator): the same answer.
  CHECK(core::densest_augmented_boxes(mosaic, pm.registry(), 96).densest == drawn.densest);

  const core::Pipeline no_mosaic = load({"stages.mosaic.params.p=0.0"});
  const auto single = core::densest_augmented_boxes(no_mosaic, pm.registry(), 96);
  CHECK(single.densest > 0);
  CHECK(single.densest <= single.info.max_boxes);
}
