#pragma once
// Grids of training samples with their boxes and class names drawn: `yoloflow preview` and the
// trainer's train_batch0..2.jpg (what users check before trusting a run; TensorBoard shows
// them too).
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "yoloflow/sample.h"

namespace yoloflow::core {

// Tiles of the largest sample's size, `columns` per row (0: a near-square grid), scaled so the
// grid's longer side is at most `max_side`; grey 114 where a tile is not filled.
// `box_labels`, when given, is each sample's boxes' text instead of the class name (validation's
// predicted boxes show "name 0.87").
cv::Mat draw_sample_grid(const std::vector<Sample>& samples, const std::vector<std::string>& names, int max_side,
                         int columns = 0, const std::vector<std::vector<std::string>>* box_labels = nullptr);

// A batch's images (RGB NHWC -> BGR) and boxes (normalised cx cy w h -> pixels) as samples, and
// a segmentation batch's masks (image_masks or masks targets) as each instance's mask.
// A segmentation sample's masks or outlines are drawn filled under its boxes.
std::vector<Sample> samples_of_batch(const Batch& batch);

}  // namespace yoloflow::core
