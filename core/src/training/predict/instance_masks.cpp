#include "training/predict/instance_masks.h"

#include <algorithm>
#include <cmath>

#include <opencv2/imgproc.hpp>

#include "training/detect/instance_mask_ops.h"

namespace yoloflow::core {
namespace {

constexpr std::int64_t kChunk = 8;  // masks resized at once: memory, whatever the detections

// The outer contours of a 0/1 mask, each point mapped by `map`.
template <class Map>
Outlines contours_of(const torch::Tensor& mask, Map map) {
  const auto m = mask.contiguous();
  cv::Mat image(static_cast<int>(m.size(0)), static_cast<int>(m.size(1)), CV_8U, m.data_ptr<std::uint8_t>());
  std::vector<std::vector<cv::Point>> found;
  cv::findContours(image, found, cv::RETR_EXTERNAL, cv::CHAIN_APPROX_SIMPLE);  // reads, does not write
  Outlines out;
  for (const auto& c : found) {
    std::vector<cv::Point2f> points;
    points.reserve(c.size());
    for (const auto& p : c) points.push_back(map(p));
    out.push_back(std::move(points));
  }
  return out;
}

}  // namespace

std::vector<Outlines> instance_outlines(const torch::Tensor& prototypes, const torch::Tensor& coefficients,
                                        const torch::Tensor& boxes_in, std::int64_t height, std::int64_t width,
                                        const Geometry& g, bool retina) {
  torch::NoGradGuard no_grad;
  const MaskProducts products(prototypes, coefficients);
  const auto n = products.size(), h = products.height(), w = products.width();
  const auto boxes = boxes_in.to(torch::kCPU, torch::kFloat);
  const int ow = g.original_width, oh = g.original_height;
  std::vector<Outlines> out;
  out.reserve(static_cast<std::size_t>(n));
  for (std::int64_t begin = 0; begin < n; begin += kChunk) {
    const auto len = std::min(kChunk, n - begin);
    const auto masks = products.chunk(begin, len);
    const auto chunk_boxes = boxes.narrow(0, begin, len);
    torch::Tensor binary;  // (len, H, W) uint8 in the pixels the contours are traced in
    if (!retina) {
      const auto ratios = torch::tensor({static_cast<float>(w) / static_cast<float>(width),
                                         static_cast<float>(h) / static_cast<float>(height),
                                         static_cast<float>(w) / static_cast<float>(width),
                                         static_cast<float>(h) / static_cast<float>(height)});
      binary = resize_masks(crop_masks(masks, chunk_boxes * ratios), height, width).gt(0).to(torch::kUInt8);
    } else {
      // The letterbox's padding at the prototypes' scale cut off, the rest resized to the original.
      const double gain = std::min(static_cast<double>(h) / oh, static_cast<double>(w) / ow);
      const double pad_w = (w - std::round(ow * gain)) / 2, pad_h = (h - std::round(oh * gain)) / 2;
      const auto top = static_cast<std::int64_t>(std::round(pad_h - 0.1));
      const auto left = static_cast<std::int64_t>(std::round(pad_w - 0.1));
      const auto bottom = h - static_cast<std::int64_t>(std::round(pad_h + 0.1));
      const auto right = w - static_cast<std::int64_t>(std::round(pad_w + 0.1));
      const auto inner = masks.slice(1, top, bottom).slice(2, left, right);
      // The boxes in original pixels, as the detections report them.
      const auto original = torch::stack({(chunk_boxes.select(1, 0) - g.pad_x) / g.ratio_x,
                                          (chunk_boxes.select(1, 1) - g.pad_y) / g.ratio_y,
                                          (chunk_boxes.select(1, 2) - g.pad_x) / g.ratio_x,
                                          (chunk_boxes.select(1, 3) - g.pad_y) / g.ratio_y},
                                         1)
                                .to(torch::kFloat);
      binary = crop_masks(resize_masks(inner, oh, ow), original).gt(0).to(torch::kUInt8);
    }
    for (std::int64_t i = 0; i < len; ++i) {
      if (retina) {
        out.push_back(contours_of(binary[i], [](const cv::Point& p) { return cv::Point2f(p.x, p.y); }));
      } else {
        out.push_back(contours_of(binary[i], [&](const cv::Point& p) {
          const auto x = std::clamp((p.x - g.pad_x) / g.ratio_x, 0.0, static_cast<double>(ow));
          const auto y = std::clamp((p.y - g.pad_y) / g.ratio_y, 0.0, static_cast<double>(oh));
          return cv::Point2f(static_cast<float>(x), static_cast<float>(y));
        }));
      }
    }
  }
  return out;
}

}  // namespace yoloflow::core
