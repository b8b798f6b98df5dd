#include "train/batch_targets.h"

#include "train/detection_loss.h"
#include "yoloflow/log.h"

namespace yoloflow::core {

torch::Tensor BatchTargets::operator()(const Batch& batch, bool captured, int epoch, std::int64_t step) {
  auto rows = torch::from_blob(const_cast<float*>(batch.targets.data()), {batch.num_boxes(), 6}, torch::kFloat).clone();
  std::int64_t dropped = 0;
  // Padded per image: a micro-batch's targets are its images' rows, a slice on dim 0. With a
  // captured step, every batch that fits takes its shape.
  torch::Tensor targets = pad_targets(rows, batch.size, rows_.fixed, &dropped, rows_.multiple, captured ? rows_.fit : 0);
  if (dropped > 0 && warned_epoch_ != epoch) {  // once per epoch, not per step
    warned_epoch_ = epoch;
    YF_LOG_WARN("train: " << dropped << " box(es) in epoch " << epoch + 1 << ", step " << step + 1
                          << " beyond target_rows = " << rows_.fixed
                          << " per image were dropped; raise target_rows or set it to 0");
  }
  return targets;
}

}  // namespace yoloflow::core
