#include "training/eval/mask_rle.h"

#include <algorithm>
#include <cmath>

#include "training/detect/instance_mask_ops.h"

namespace yoloflow::core {
namespace {

constexpr std::int64_t kChunk = 4;  // masks at the batch's size held at once

// COCO's string form of RLE counts: each count (from the third on, less the count two before)
// in 5-bit groups, low first, 0x20 marking that more follow, offset by 48 into printable ASCII.
std::string counts_string(const std::vector<std::int64_t>& counts) {
  std::string out;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    std::int64_t x = counts[i];
    if (i > 2) x -= counts[i - 2];
    bool more = true;
    while (more) {
      std::int64_t c = x & 0x1f;
      x >>= 5;  // arithmetic: a negative delta ends at -1
      more = (c & 0x10) ? x != -1 : x != 0;
      if (more) c |= 0x20;
      out.push_back(static_cast<char>(c + 48));
    }
  }
  return out;
}

}  // namespace

std::string coco_rle_counts(const torch::Tensor& mask) {
  // Column-major: the transposed mask's rows, one after the other.
  const auto flat = mask.to(torch::kUInt8).t().contiguous();
  const std::uint8_t* p = flat.data_ptr<std::uint8_t>();
  const auto n = flat.numel();
  std::vector<std::int64_t> counts;
  std::uint8_t value = 0;  // runs start with background
  std::int64_t run = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    const std::uint8_t v = p[k] != 0;
    if (v != value) {
      counts.push_back(run);
      run = 0;
      value = v;
    }
    ++run;
  }
  counts.push_back(run);
  return counts_string(counts);
}

std::vector<std::string> detection_rles(const torch::Tensor& prototypes, const torch::Tensor& coefficients,
                                        const torch::Tensor& boxes_in, std::int64_t height, std::int64_t width,
                                        const Geometry& g) {
  torch::NoGradGuard no_grad;
  const MaskProducts products(prototypes, coefficients);
  const auto n = products.size();
  const auto boxes = boxes_in.to(torch::kCPU, torch::kFloat);
  // The letterbox's padding in the batch's pixels, cut as Ultralytics' scale_masks cuts it.
  const auto top = static_cast<std::int64_t>(std::round(g.pad_y - 0.1));
  const auto left = static_cast<std::int64_t>(std::round(g.pad_x - 0.1));
  const auto bottom = height - static_cast<std::int64_t>(std::round(g.pad_y + 0.1));
  const auto right = width - static_cast<std::int64_t>(std::round(g.pad_x + 0.1));
  std::vector<std::string> out;
  out.reserve(static_cast<std::size_t>(n));
  for (std::int64_t begin = 0; begin < n; begin += kChunk) {
    const auto len = std::min(kChunk, n - begin);
    const auto masks = resize_masks(products.chunk(begin, len), height, width);
    const auto binary = crop_masks(masks, boxes.narrow(0, begin, len)).gt(0).to(torch::kFloat);
    const auto original = resize_masks(binary.slice(1, top, bottom).slice(2, left, right), g.original_height,
                                  g.original_width)
                              .to(torch::kUInt8);  // truncation, as Ultralytics' .byte()
    for (std::int64_t i = 0; i < len; ++i) out.push_back(coco_rle_counts(original[i]));
  }
  return out;
}

}  // namespace yoloflow::core
