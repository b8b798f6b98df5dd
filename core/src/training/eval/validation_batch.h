#pragma once
// One batch of validation as the `train` sink (each epoch) and the `val` sink (given
// weights) both run it: forward, decode, NMS, and the detections and labels of each image
// added to the metrics; optionally the validation losses. One function so the two report
// the same numbers for the same weights and images.
#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "training/detect/nms.h"
#include "training/eval/detection_metrics.h"
#include "yoloflow/loss.h"
#include "yoloflow/model.h"
#include "yoloflow/precision.h"

namespace yoloflow::core {

// `pixels`: (N, H, W, 3) uint8 RGB letterboxed images (CPU); `rows`: (M, 6) float targets
// [batch_idx, cls, cx, cy, w, h] normalised by W and H, as the collate batcher writes them.
// The model must be in eval mode and gradients off. `precision` (autocast) and `loss` may be
// null. Returns the batch's loss items (box, cls, dfl) on the CPU, or an undefined tensor
// when `loss` is null. `kept`, when given, receives each image's detections after NMS
// ((N, 6) [x1, y1, x2, y2, score, cls] in the batch's pixels).
torch::Tensor validate_batch(Model& model, const torch::Device& device, PrecisionStrategy* precision,
                             Loss* loss, const torch::Tensor& pixels, const torch::Tensor& rows,
                             const NmsOptions& nms, DetectionMetrics& metrics,
                             std::vector<torch::Tensor>* kept = nullptr);

}  // namespace yoloflow::core
