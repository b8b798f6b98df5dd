#pragma once
// A Batch's boxes as the padded (B, M, 5) targets the loss takes (detection_loss.h,
// pad_targets), by the train sink's target_rows rules; boxes beyond a fixed row count are
// dropped with one warning per epoch.
#include <cstdint>

#include <torch/torch.h>

#include "yoloflow/sample.h"

namespace yoloflow::core {

struct TargetRows {
  std::int64_t fixed = 0;     // target_rows: exactly this many per image (0 = the fullest image's)
  std::int64_t multiple = 1;  // target_rows_multiple: round the fullest image's count up to this
  std::int64_t fit = 0;       // a captured step's row count (cuda_graph_rows), 0 = none
};

class BatchTargets {
 public:
  explicit BatchTargets(TargetRows rows) : rows_(rows) {}
  // `epoch` and `step` (0-based) place the warning.
  torch::Tensor operator()(const Batch& batch, bool captured, int epoch, std::int64_t step);

 private:
  TargetRows rows_;
  int warned_epoch_ = -1;  // epoch whose dropped boxes were already reported
};

}  // namespace yoloflow::core
