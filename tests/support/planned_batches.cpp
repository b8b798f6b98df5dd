#include "support/planned_batches.h"

#include <memory>

#include <doctest/doctest.h>
#include <opencv2/imgproc.hpp>

#include "runtime/run/results_csv.h"
#include "training/compose/pixel_composer.h"
#include "yoloflow/pixel_plan.h"
#include "yoloflow/rng.h"

namespace yoloflow::test {

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
