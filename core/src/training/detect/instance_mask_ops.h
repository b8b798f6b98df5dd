#pragma once
// The two steps of Ultralytics' instance masks that validation and predict share: masks resized
// bilinearly (align_corners false, as F.interpolate), and masks kept inside their boxes (pixel
// columns x1 <= c < x2 and rows y1 <= r < y2 of the boxes' exact corners, Ultralytics' rule on
// CUDA). CPU float tensors.
#include <cstdint>

#include <torch/torch.h>

namespace yoloflow::core {

// Detections' masks before any threshold: coefficients (N, C) times one image's prototypes
// (C, h, w), a chunk of detections at a time (memory bounded whatever N), on the CPU in float.
class MaskProducts {
 public:
  MaskProducts(const torch::Tensor& prototypes, const torch::Tensor& coefficients);
  std::int64_t size() const { return coefficients_.size(0); }
  std::int64_t height() const { return h_; }
  std::int64_t width() const { return w_; }
  // Detections [begin, begin + count): (count, h, w).
  torch::Tensor chunk(std::int64_t begin, std::int64_t count) const;

 private:
  torch::Tensor prototypes_, coefficients_;  // (C, h * w), (N, C)
  std::int64_t h_ = 0, w_ = 0;
};

// (N, h, w) -> (N, height, width).
torch::Tensor resize_masks(const torch::Tensor& masks, std::int64_t height, std::int64_t width);

// `masks` (N, h, w) with each one's pixels outside its box (N, 4 xyxy, in these pixels) set to 0.
torch::Tensor crop_masks(const torch::Tensor& masks, const torch::Tensor& boxes);

}  // namespace yoloflow::core
