#pragma once
// YOLO11 detection loss (Ultralytics' v8DetectionLoss semantics, our own implementation):
// TaskAlignedAssigner, CIoU box loss, DFL loss, BCE class loss. Written for few, large
// kernels and no host synchronisation: targets arrive padded to a fixed number of rows.
#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "yoloflow/model.h"

namespace yoloflow::core {

struct LossGains {
  double box = 7.5;
  double cls = 0.5;
  double dfl = 1.5;
};

struct AssignerOptions {
  int topk = 10;
  double alpha = 0.5;
  double beta = 6.0;
  double eps = 1e-9;
  // Small objects (Ultralytics 8.4): a GT side shorter than `small_side` pixels counts as
  // `small_side_as` pixels, around the same centre, when choosing candidate anchors, so that
  // tiny boxes still get anchors; the box itself (IoU, targets) is unchanged. 0 = off here;
  // DetectionLoss sets them to the head's two smallest strides unless given (negative = off).
  double small_side = 0.0;
  double small_side_as = 0.0;
};

struct LossResult {
  torch::Tensor total;  // scalar: (box*g_box + cls*g_cls + dfl*g_dfl) * batch_size, for backward
  torch::Tensor items;  // (3,) detached: box, cls, dfl (gained, not multiplied by batch size)
  torch::Tensor score_sum;  // () detached: the target-score sum the losses divide by, before its floor
};

class DetectionLoss {
 public:
  DetectionLoss(const DetectionHead& head, LossGains gains = {}, AssignerOptions assigner = {});
  // `levels`: the model's training output, per level (B, 4*reg_max + nc, H, W).
  // `targets`: (B, M, 5) float [cls, cx, cy, w, h], coordinates normalised to 0..1 by the
  // image width and height; rows with cls < 0 are padding. Image size is inferred from the
  // level shapes and strides. The losses are divided by the target-score sum, at least
  // `min_score_sum` (Ultralytics' floor: 1); a micro-batch passes its share of the batch's images
  // (micro_batches.h), so that its floor adds up to the whole batch's.
  LossResult operator()(const std::vector<torch::Tensor>& levels, const torch::Tensor& targets,
                        double min_score_sum = 1.0);
  void set_gains(const LossGains& gains) { gains_ = gains; }

 private:
  DetectionHead head_;
  LossGains gains_;
  AssignerOptions assigner_;
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
