#pragma once
// Batches whose pixels are planned, made as the graph runner's workers make them, and what the
// planned-pixel tests read back from a run.
#include <cstddef>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "runtime/graph/stage_sample_loaders.h"
#include "yoloflow/pixel_plan.h"
#include "yoloflow/sample.h"

namespace yoloflow::test {

// Samples 0..n-1 through the loaders' first `stages` augmentations, planned (sample i drawing
// from Rng(i)), as one batch of n images of imgsz x imgsz. With `made`, each sample is first
// made on the CPU with the same draws, its image appended there (BGR).
Batch planned_batch(core::StageSampleLoaders& loaders, std::size_t stages, std::size_t n, int imgsz,
                    std::vector<cv::Mat>* made = nullptr);

// The plan's image composed on the host, as BGR (the CPU plugins' order).
cv::Mat composed_bgr(const PixelPlan& plan);
// Bytes that differ between two images of one size and type.
long long differing_bytes(const cv::Mat& a, const cv::Mat& b);

// The run's training losses, epoch by epoch (box, cls, dfl), as its results.csv has them.
std::vector<double> epoch_losses(const std::string& run);

}  // namespace yoloflow::test
