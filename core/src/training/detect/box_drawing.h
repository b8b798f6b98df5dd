#pragma once
// Drawing labelled boxes on images (OpenCV only): `yoloflow preview` draws ground truth,
// `yoloflow predict` its detections, with the same colours per class.
#include <string>

#include <opencv2/core.hpp>

namespace yoloflow::core {

// Box colour of a class (BGR): a fixed palette of saturated colours, cycled.
cv::Scalar class_colour(int cls);

// Draws the rectangle p1-p2 in the class colour, with `label` in white on a filled tag
// above its top-left corner, kept below the row `top` (inside the image, or inside a grid
// tile, when the box touches its top edge). `font_scale` and `thickness` size text and line.
void draw_labelled_box(cv::Mat& image, cv::Point p1, cv::Point p2, int cls, const std::string& label,
                       double font_scale = 0.4, int thickness = 2, int top = 0);

}  // namespace yoloflow::core
