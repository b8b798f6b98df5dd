#pragma once
// A validation batch's labels per image, as the evaluators match them against predictions.
#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "yoloflow/sample.h"

namespace yoloflow::detection_eval {

struct ImageLabels {
  torch::Tensor labels;             // (M, 5) float [cls, x1, y1, x2, y2] in the batch's pixels
  std::vector<std::int64_t> rows;   // each label's row in the batch's boxes array
};

// The batch's boxes (N, 6) [batch_idx, cls, cx, cy, w, h], normalised, split by image (the host
// checked their shape; an image index outside the batch is refused).
std::vector<ImageLabels> labels_per_image(const Batch& batch);

}  // namespace yoloflow::detection_eval
