#pragma once
// A segmentation model's detection as outlines: the outer contours of its mask, in the original
// image's pixels (instance_masks.h makes them). OpenCV only.
#include <vector>

#include <opencv2/core.hpp>

namespace yoloflow::core {

using Outlines = std::vector<std::vector<cv::Point2f>>;

// One polygon for a detection's outlines, as a label file holds one per instance: a single
// outline as it is; several joined in order, each entered and left at its point nearest to
// the polygon so far (a zero-width bridge), so the polygon covers every part. Empty for none.
std::vector<cv::Point2f> joined_polygon(const Outlines& outlines);

}  // namespace yoloflow::core
