#pragma once
// Box geometry shared by the detection loss and its assigner: anchors at cell centres,
// distance <-> box conversions, and the complete IoU (CIoU). All batched, no host sync.
#include <cstdint>
#include <utility>
#include <vector>

#include <torch/torch.h>

namespace yoloflow::yolo11_loss {

// Anchor points (A, 2) [x, y] in grid units of their own level (cell centres, +0.5) and the
// stride of each anchor (A, 1), for levels of the given (H, W) sizes and strides, in the
// order of the levels then row-major.
std::pair<torch::Tensor, torch::Tensor> make_anchors(
    const std::vector<std::pair<std::int64_t, std::int64_t>>& sizes,
    const std::vector<std::int64_t>& strides, const torch::TensorOptions& options);

// Distances (..., 4) [left, top, right, bottom] from `anchors` (..., 2) to xyxy boxes.
torch::Tensor dist_to_bbox(const torch::Tensor& dist, const torch::Tensor& anchors);
// The inverse, clamped to [0, max_dist] (the DFL target range).
torch::Tensor bbox_to_dist(const torch::Tensor& anchors, const torch::Tensor& boxes,
                           double max_dist);

// Complete IoU of xyxy boxes that broadcast against each other (..., 4) -> (...).
// IoU minus the normalised centre distance and an aspect-ratio term whose weight is not
// differentiated, as in the CIoU paper.
torch::Tensor bbox_ciou(const torch::Tensor& a, const torch::Tensor& b, double eps = 1e-7);

}  // namespace yoloflow::yolo11_loss
