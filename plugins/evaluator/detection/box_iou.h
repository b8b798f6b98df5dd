#pragma once
// Box overlap for validation's matching of detections to labels.
#include <torch/torch.h>

namespace yoloflow::detection_eval {

// Plain IoU matrix (N, 4) x (M, 4) xyxy -> (N, M).
torch::Tensor bbox_iou_matrix(const torch::Tensor& a, const torch::Tensor& b);

}  // namespace yoloflow::detection_eval
