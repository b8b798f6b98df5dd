#include "training/detect/box_drawing.h"

#include <algorithm>

#include <opencv2/imgproc.hpp>

namespace yoloflow::core {

cv::Scalar class_colour(int cls) {
  static const cv::Scalar palette[] = {
      {56, 56, 255},  {151, 157, 255}, {31, 112, 255}, {29, 178, 255}, {49, 210, 207},
      {10, 249, 72},  {23, 204, 146},  {134, 219, 61}, {52, 147, 26},  {187, 212, 0},
      {168, 153, 44}, {255, 194, 0},   {147, 69, 52},  {255, 115, 100}, {236, 24, 0},
      {255, 56, 132}, {133, 0, 82},    {255, 56, 203}, {200, 149, 255}, {199, 55, 255}};
  const int n = static_cast<int>(sizeof(palette) / sizeof(palette[0]));
  return palette[((cls % n) + n) % n];
}

void draw_labelled_box(cv::Mat& image, cv::Point p1, cv::Point p2, int cls, const std::string& label,
                       double font_scale, int thickness, int top) {
  const cv::Scalar colour = class_colour(cls);
  cv::rectangle(image, p1, p2, colour, thickness);
  if (label.empty()) return;
  const int text_thickness = std::max(1, thickness / 2);
  int base = 0;
  const cv::Size ts = cv::getTextSize(label, cv::FONT_HERSHEY_SIMPLEX, font_scale, text_thickness, &base);
  // The tag sits above the box; a box at the top edge gets it just inside instead.
  const cv::Point org(p1.x, std::max(top + ts.height + 2, p1.y));
  cv::rectangle(image, cv::Point(org.x, org.y - ts.height - 2), cv::Point(org.x + ts.width + 2, org.y), colour,
                cv::FILLED);
  cv::putText(image, label, cv::Point(org.x + 1, org.y - 2), cv::FONT_HERSHEY_SIMPLEX, font_scale,
              cv::Scalar(255, 255, 255), text_thickness, cv::LINE_AA);
}

}  // namespace yoloflow::core
