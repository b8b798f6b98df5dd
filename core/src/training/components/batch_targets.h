#pragma once
// A Batch's boxes as the padded (B, M, 5) targets a loss takes (yoloflow/loss.h), by the
// train sink's target_rows rules; boxes beyond a fixed row count are dropped with one warning
// per epoch.
#include <cstdint>

#include <torch/torch.h>

#include "yoloflow/detection_head.h"
#include "yoloflow/sample.h"

namespace yoloflow::core {

struct TargetRows {
  std::int64_t fixed = 0;     // target_rows: exactly this many per image (0 = the fullest image's)
  std::int64_t multiple = 1;  // target_rows_multiple: round the fullest image's count up to this
  std::int64_t fit = 0;       // a captured step's row count (cuda_graph_rows), 0 = none
};

// The batch's boxes array as an (N, 6) float tensor that views its values (no copy; read it,
// do not write it). Throws yoloflow::Error when the array is not N rows of 6 values (a batcher
// plugin's mistake), before anything reads past its values.
torch::Tensor box_rows(const Batch& batch);

class BatchTargets {
 public:
  explicit BatchTargets(TargetRows rows) : rows_(rows) {}
  // `epoch` and `step` (0-based) place the warning.
  torch::Tensor operator()(const Batch& batch, bool captured, int epoch, std::int64_t step);

 private:
  TargetRows rows_;
  int warned_epoch_ = -1;  // epoch whose dropped boxes were already reported
};

// Converts Batch targets rows [batch_idx, cls, cx, cy, w, h] (N, 6) into the padded
// (B, M, 5) layout above. M = `fixed_rows` when > 0 (static shapes, as a captured CUDA graph
// needs; boxes beyond it are dropped and counted in `dropped` if given), otherwise the
// fullest image's box count rounded up to a multiple of `round_up`: padding rows are ignored
// by the loss, and few distinct shapes let the CUDA caching allocator and kernels settle.
// `fit_rows` > 0 (without fixed_rows): a batch whose fullest image fits gets exactly that many
// rows (a captured CUDA graph's shape), a fuller one the rounded count (nothing dropped).
torch::Tensor pad_targets(const torch::Tensor& rows, std::int64_t batch_size,
                          std::int64_t fixed_rows = 0, std::int64_t* dropped = nullptr,
                          std::int64_t round_up = 1, std::int64_t fit_rows = 0);
// The head's largest stride (32 for YOLO11; 32 when the head lists none): image sizes are
// multiples of it.
std::int64_t largest_stride(const DetectionHead& head);
// pad_targets' M for a batch whose fullest image has `fullest` boxes (auto batch profiles
// the step with the rows the sink will pad to).
std::int64_t padded_target_rows(std::int64_t fullest, std::int64_t fixed_rows = 0, std::int64_t round_up = 1,
                                std::int64_t fit_rows = 0);

}  // namespace yoloflow::core
