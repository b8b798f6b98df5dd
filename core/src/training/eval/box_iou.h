#pragma once
// Plain IoU between two sets of xyxy boxes, for the host-side plots (confusion matrix, curves).
#include <torch/torch.h>

namespace yoloflow::core {

// a (M, 4), b (N, 4), xyxy -> (M, N).
torch::Tensor pairwise_box_iou(const torch::Tensor& a, const torch::Tensor& b);

}  // namespace yoloflow::core
