#pragma once
// Mask IoU between a validation image's labels and its predictions, as Ultralytics 8.4's
// SegmentationValidator measures it: both at the prototypes' size (1/4 of the batch's pixels).
// - A prediction's mask: its coefficients times the image's prototypes, kept where above 0 and
//   inside its box scaled to the prototypes (pixel c kept where x1 <= c < x2, the box's exact
//   corners: the rule Ultralytics' validation takes on CUDA).
// - A label's mask: the batch's mask target (overlap planes or per-instance planes, at the
//   batcher's mask_ratio), resized bilinearly to the prototypes' size and kept above 0.5 when
//   its size differs.
// - IoU = intersection / (union + 1e-7), computed in float32 as the validator does.
#include <cstdint>
#include <vector>

#include <torch/torch.h>

namespace yoloflow::segmentation_eval {

// (N, h, w) 0/1 float: `coefficients` (N, C) over `prototypes` (C, h, w), cropped by `boxes` (N, 4)
// xyxy in pixels of a batch of `height` x `width`.
torch::Tensor predicted_masks(const torch::Tensor& prototypes, const torch::Tensor& coefficients,
                              const torch::Tensor& boxes, std::int64_t height, std::int64_t width);

// (M, h, w) 0/1 float from label planes `planes` (M, H', W') 0/1 float, resized to h x w when
// H' x W' differs.
torch::Tensor label_masks_at(const torch::Tensor& planes, std::int64_t h, std::int64_t w);

// (M, N) IoU between `labels` (M, h, w) and `predictions` (N, h, w), both 0/1 float.
torch::Tensor mask_iou(const torch::Tensor& labels, const torch::Tensor& predictions);

}  // namespace yoloflow::segmentation_eval
