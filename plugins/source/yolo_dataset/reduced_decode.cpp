#include "reduced_decode.h"

#include <opencv2/imgcodecs.hpp>

namespace yoloflow::plugins::yolo {
namespace {

int ceil_div(int a, int b) { return (a + b - 1) / b; }

}  // namespace

int jpeg_reduction(int width, int height, cv::Size resized) {
  if (width <= 0 || height <= 0) return 1;
  for (const int factor : {8, 4, 2}) {
    if (ceil_div(width, factor) >= resized.width && ceil_div(height, factor) >= resized.height) return factor;
  }
  return 1;
}

int check_decode_flag(int width, int height) {
  return width >= 8 && height >= 8 ? cv::IMREAD_REDUCED_GRAYSCALE_8 : cv::IMREAD_GRAYSCALE;
}

int reduced_color_flag(int factor) {
  switch (factor) {
    case 8: return cv::IMREAD_REDUCED_COLOR_8;
    case 4: return cv::IMREAD_REDUCED_COLOR_4;
    case 2: return cv::IMREAD_REDUCED_COLOR_2;
    default: return cv::IMREAD_COLOR;
  }
}

std::optional<cv::Size> full_size_of(cv::Size reduced, int width, int height, int factor) {
  const cv::Size stored(ceil_div(width, factor), ceil_div(height, factor));
  const bool upright = reduced == stored;
  const bool turned = reduced == cv::Size(stored.height, stored.width);
  if (upright == turned) return std::nullopt;
  return upright ? cv::Size(width, height) : cv::Size(height, width);
}

}  // namespace yoloflow::plugins::yolo
