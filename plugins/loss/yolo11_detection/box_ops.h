#pragma once
// Box overlap for the detection loss and its assigner: the complete IoU (CIoU). Batched, no
// host sync. Anchors and distance <-> box conversions are the head's (yoloflow/head_geometry.h).
#include <torch/torch.h>

namespace yoloflow::yolo11_loss {

// Complete IoU of xyxy boxes that broadcast against each other (..., 4) -> (...).
// IoU minus the normalised centre distance and an aspect-ratio term whose weight is not
// differentiated, as in the CIoU paper.
torch::Tensor bbox_ciou(const torch::Tensor& a, const torch::Tensor& b, double eps = 1e-7);

}  // namespace yoloflow::yolo11_loss
