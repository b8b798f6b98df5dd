#include "training/compose/hsv_tables.h"

#include <opencv2/imgproc.hpp>

namespace yoloflow::core {

const HsvTables& hsv_tables() {
  static const HsvTables tables = [] {
    HsvTables t;
    cv::Mat bgr(4096, 4096, CV_8UC3);
    std::uint8_t* p = bgr.ptr<std::uint8_t>();
    for (std::uint32_t i = 0; i < (1u << 24); ++i, p += 3) {
      p[0] = static_cast<std::uint8_t>(i >> 16);
      p[1] = static_cast<std::uint8_t>(i >> 8);
      p[2] = static_cast<std::uint8_t>(i);
    }
    cv::Mat hsv;
    cv::cvtColor(bgr, hsv, cv::COLOR_BGR2HSV);
    t.bgr_to_hsv.assign(hsv.ptr<std::uint8_t>(), hsv.ptr<std::uint8_t>() + (std::size_t{1} << 24) * 3);
    cv::Mat all(180 * 256, 256, CV_8UC3);
    p = all.ptr<std::uint8_t>();
    for (int h = 0; h < 180; ++h) {
      for (int s = 0; s < 256; ++s) {
        for (int v = 0; v < 256; ++v, p += 3) {
          p[0] = static_cast<std::uint8_t>(h);
          p[1] = static_cast<std::uint8_t>(s);
          p[2] = static_cast<std::uint8_t>(v);
        }
      }
    }
    cv::Mat back;
    cv::cvtColor(all, back, cv::COLOR_HSV2BGR);
    t.hsv_to_bgr.assign(back.ptr<std::uint8_t>(), back.ptr<std::uint8_t>() + std::size_t{180} * 256 * 256 * 3);
    return t;
  }();
  return tables;
}

}  // namespace yoloflow::core
