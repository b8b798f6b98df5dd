#pragma once
// Small drawing helpers the validation plots share (OpenCV only, no plotting library): a
// white-to-blue colour scale, text placed by its centre, its right end or turned upright, and a
// palette for one line per class.
#include <string>

#include <opencv2/core.hpp>

namespace yoloflow::core {

// 0 -> white, 1 -> dark blue (BGR), as a "Blues" colour map.
cv::Scalar blues(double t);
// The colour of the i-th of many lines: distinct hues, cycled.
cv::Scalar line_colour(int i);

void put_centred(cv::Mat& canvas, const std::string& text, cv::Point centre, double scale, cv::Scalar colour);
void put_right_aligned(cv::Mat& canvas, const std::string& text, cv::Point right_middle, double scale, cv::Scalar colour);
// Text turned 90 degrees (read bottom to top), its top end at `top_middle`.
void put_vertical(cv::Mat& canvas, const std::string& text, cv::Point top_middle, double scale, cv::Scalar colour);

}  // namespace yoloflow::core
