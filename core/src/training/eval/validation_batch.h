#pragma once
// One batch of validation as the `train` sink (each epoch) and the `val` sink (given
// weights) both run it: forward, decode, NMS, each image's predictions with the head's other
// outputs beside them (for the evaluator); optionally the validation losses. One function so
// the two report the same numbers for the same weights and images.
#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "training/detect/nms.h"
#include "yoloflow/evaluator.h"
#include "yoloflow/loss.h"
#include "yoloflow/model.h"
#include "yoloflow/precision.h"
#include "yoloflow/sample.h"

namespace yoloflow::core {

// Where validation's time goes, summed over batches, as Ultralytics' speed line splits it:
// preprocess (the batch to the device as floats), inference (the network and its box decode),
// loss, postprocess (NMS). The device is synchronised at each boundary.
struct ValidationTimes {
  double preprocess_ms = 0, inference_ms = 0, loss_ms = 0, postprocess_ms = 0;
  std::int64_t images = 0;
};

// `batch`: letterboxed images with their targets, as the collate batcher writes them.
// The model must be in eval mode and gradients off. `precision` (autocast) and `loss` may be
// null. Returns the batch's loss items (box, cls, dfl) on the CPU, or an undefined tensor
// when `loss` is null. `predictions` receives each image's predictions after NMS (boxes (N, 6)
// [x1, y1, x2, y2, score, cls] in the batch's pixels, and the head's other outputs of those
// rows). `times`, when given, adds this batch's phases.
torch::Tensor validate_batch(Model& model, const torch::Device& device, PrecisionStrategy* precision,
                             Loss* loss, const Batch& batch,
                             const NmsOptions& nms, std::vector<ImagePredictions>& predictions,
                             ValidationTimes* times = nullptr);

}  // namespace yoloflow::core
