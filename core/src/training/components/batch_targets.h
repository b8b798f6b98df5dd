#pragma once
// A Batch's target arrays as the padded targets a loss takes (yoloflow/loss.h LossTargets),
// by the train sink's target_rows rules; instances beyond a fixed row count are dropped (their
// box, keypoints and every other per-instance row together) with one warning per epoch.
#include <cstdint>
#include <string>

#include <torch/torch.h>

#include "yoloflow/head.h"
#include "yoloflow/loss.h"
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

// Every target array of `batch` as LossTargets on the CPU: "boxes" by pad_targets below, every
// other per-instance array (N, ...) into (B, M, ...) at the same rows (padding 0), per-image
// arrays (targets::per_image) as (B, ...). Throws yoloflow::Error naming the array when its
// shape does not fit the batch (a batcher plugin's mistake).
LossTargets loss_targets(const Batch& batch, std::int64_t fixed_rows = 0, std::int64_t* dropped = nullptr,
                         std::int64_t round_up = 1, std::int64_t fit_rows = 0);
// The images [start, start + size) of `targets` (every tensor's dim 0): a micro-batch's.
LossTargets narrow_targets(const LossTargets& targets, std::int64_t start, std::int64_t size);
// `targets` on `device` (non_blocking from pinned memory where asked).
LossTargets targets_to(const LossTargets& targets, const torch::Device& device, bool non_blocking = false);
// "boxes (16, 12, 5) + keypoints (16, 12, 17, 3)": the shapes, for a captured graph's key and messages.
std::string target_shapes(const LossTargets& targets);

class BatchTargets {
 public:
  explicit BatchTargets(TargetRows rows) : rows_(rows) {}
  // `epoch` and `step` (0-based) place the warning.
  LossTargets operator()(const Batch& batch, bool captured, int epoch, std::int64_t step);

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
std::int64_t largest_stride(const HeadDescription& head);
// pad_targets' M for a batch whose fullest image has `fullest` boxes (auto batch profiles
// the step with the rows the sink will pad to).
std::int64_t padded_target_rows(std::int64_t fullest, std::int64_t fixed_rows = 0, std::int64_t round_up = 1,
                                std::int64_t fit_rows = 0);

}  // namespace yoloflow::core
