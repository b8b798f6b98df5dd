#pragma once
// OpenCV's 8-bit colour conversions as tables, made once by cv::cvtColor itself, so a planned
// image's colours (composed_pixel.h) are the hsv plugin's to the byte: BGR -> HSV for every one
// of the 2^24 colours (48 MiB) and HSV -> BGR for every hue 0..179, saturation and value (34 MiB).
#include <cstdint>
#include <vector>

namespace yoloflow::core {

struct HsvTables {
  std::vector<std::uint8_t> bgr_to_hsv;  // index (b << 16 | g << 8 | r) * 3: h, s, v
  std::vector<std::uint8_t> hsv_to_bgr;  // index ((h * 256 + s) * 256 + v) * 3: b, g, r
};

// Made on first use (about 0.1 s), then shared. Thread-safe.
const HsvTables& hsv_tables();

}  // namespace yoloflow::core
