#include "support/planned_batches.h"

#include <memory>

#include <doctest/doctest.h>
#include <opencv2/imgproc.hpp>

#include "runtime/run/results_csv.h"
#include "support/paths.h"
#include "support/run_cli.h"
#include "training/compose/pixel_composer.h"
#include "yoloflow/pixel_plan.h"
#include "yoloflow/rng.h"

namespace yoloflow::test {

bool composes_on_cuda(const torch::Device& cuda) {
  if (torch::cuda::is_available() && core::PixelComposer::composes_on(cuda)) return true;
  MESSAGE("no CUDA device or no composing kernel in this build: the kernel is tested on the GPU machine");
  return false;
}

std::unique_ptr<DataSource> coco128_train_source(core::PluginManager& pm, const ComponentSetup& setup) {
  return make_component<DataSource>(pm, Kind::Source, "yolo_dataset",
                                    {{"data", coco128_dir() + "/data.yaml"}, {"split", "train"}}, setup);
}

Batch planned_batch(core::StageSampleLoaders& loaders, std::size_t stages, std::size_t n, int imgsz,
                    std::vector<cv::Mat>* made) {
  std::vector<std::shared_ptr<PixelPlan>> plans;
  std::vector<const PixelPlan*> views;
  for (std::size_t i = 0; i < n; ++i) {
    if (made != nullptr) {
      Sample m = loaders.load_source(i);
      Rng rng(i);
      loaders.apply(m, rng, stages);
      made->push_back(m.image);
    }
    Sample s = loaders.load_source(i);
    Rng rng(i);
    loaders.apply(s, rng, stages, {}, /*plan_pixels=*/true);
    plans.push_back(s.pixel_plan);
    views.push_back(plans.back().get());
  }
  Batch batch;
  batch.size = static_cast<std::int64_t>(n);
  batch.height = batch.width = imgsz;
  batch.planned = std::make_shared<PlannedPixels>(plan_batch(views, imgsz, imgsz));
  return batch;
}

cv::Mat composed_bgr(const PixelPlan& plan) {
  const PlannedPixels planned = plan_batch({&plan}, plan.width, plan.height);
  cv::Mat rgb(plan.height, plan.width, CV_8UC3);
  core::compose_on_host(planned, 1, plan.height, plan.width, rgb.ptr<std::uint8_t>());
  cv::Mat bgr;
  cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
  return bgr;
}

long long differing_bytes(const cv::Mat& a, const cv::Mat& b) {
  REQUIRE(a.size() == b.size());
  REQUIRE(a.type() == b.type());
  cv::Mat diff;
  cv::absdiff(a.reshape(1), b.reshape(1), diff);
  return cv::countNonZero(diff);
}

long long made_against_planned(core::StageSampleLoaders& loaders, std::size_t stages, std::size_t index,
                               std::uint64_t seed, std::shared_ptr<const PixelPlan>* plan) {
  CAPTURE(index);
  Sample made = loaders.load_source(index);
  Rng made_rng(seed);
  loaders.apply(made, made_rng, stages);
  Sample planned = loaders.load_source(index);
  Rng planned_rng(seed);
  loaders.apply(planned, planned_rng, stages, {}, /*plan_pixels=*/true);
  REQUIRE(planned.pixel_plan);
  CHECK(planned.image.empty());
  REQUIRE(made.boxes.size() == planned.boxes.size());
  for (std::size_t k = 0; k < made.boxes.size(); ++k) {
    CHECK(made.boxes[k].x1 == planned.boxes[k].x1);
    CHECK(made.boxes[k].y1 == planned.boxes[k].y1);
    CHECK(made.boxes[k].x2 == planned.boxes[k].x2);
    CHECK(made.boxes[k].y2 == planned.boxes[k].y2);
    CHECK(made.boxes[k].cls == planned.boxes[k].cls);
  }
  CHECK(made.geometry.pad_x == planned.geometry.pad_x);
  CHECK(made.geometry.pad_y == planned.geometry.pad_y);
  CHECK(made.geometry.ratio_x == planned.geometry.ratio_x);
  CHECK(made.geometry.ratio_y == planned.geometry.ratio_y);
  REQUIRE(planned.pixel_plan->width == made.image.cols);
  REQUIRE(planned.pixel_plan->height == made.image.rows);
  if (plan != nullptr) *plan = planned.pixel_plan;
  return differing_bytes(composed_bgr(*planned.pixel_plan), made.image);
}

std::vector<Augmentation*> planning_chain(const std::vector<std::unique_ptr<Augmentation>>& stages) {
  std::vector<Augmentation*> chain;
  for (const auto& a : stages) {
    CHECK(a->plan_support() == nullptr);
    chain.push_back(a.get());
  }
  return chain;
}

std::string write_chain_pipeline(const std::string& dir, const std::vector<ChainStage>& chain, int workers) {
  nlohmann::json stages = {{"source", {{"plugin", "yolo_dataset"}, {"params", {{"data", "data.yaml"}, {"split", "train"}}}}}};
  std::string input = "source";
  for (const ChainStage& c : chain) {
    stages[c.name] = {{"plugin", c.plugin}, {"input", input}, {"params", c.params}};
    input = c.name;
  }
  stages["batch"] = {{"plugin", "collate"}, {"input", input}, {"params", {{"batch", 2}}}};
  stages["train"] = {{"plugin", "train"},
                     {"input", "batch"},
                     {"params",
                      {{"data", "data.yaml"},
                       {"model", {{"plugin", "yolo11"}, {"params", {{"scale", "n"}}}}},
                       {"precision", {{"plugin", "fp32"}}},
                       {"scheduler", {{"plugin", "linear"}}},
                       {"val_every", 0}}}};
  const nlohmann::json pipeline = {{"name", "planned-chain"}, {"epochs", 2},     {"imgsz", 64},
                                   {"seed", 0},               {"ordered", true}, {"device", "cpu"},
                                   {"workers", workers},      {"stages", stages}};
  const std::string path = dir + "/pipeline.json";
  write_file(path, pipeline.dump(2));
  return path;
}

std::vector<std::vector<double>> losses_on_both_paths(const std::string& pipeline, const std::string& dir) {
  std::vector<std::vector<double>> losses;
  for (const std::string where : {"workers", "device"}) {
    const std::string run = dir + "/run-" + where;
    const auto r = run_cli("train " + pipeline + " --run-dir " + run + " stages.train.params.augment_on=" + where,
                           "OMP_NUM_THREADS=1 ");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    if (where == "device") CHECK(r.output.find("augmentations composed on the training device") != std::string::npos);
    losses.push_back(epoch_losses(run));
  }
  return losses;
}

std::vector<double> epoch_losses(const std::string& run) {
  core::ResultsCsv results(run + "/results.csv");
  results.load();
  std::vector<double> out;
  for (const auto& values : results.rows()) {
    for (const char* column : {"train/box_loss", "train/cls_loss", "train/dfl_loss"}) out.push_back(values.at(column));
  }
  return out;
}

}  // namespace yoloflow::test
