#pragma once
// The parameters every YOLO11 loss takes (the detection loss, and the segmentation loss built on
// it): the three gains and the task-aligned assigner's, one schema and one reading.
#include "detection_loss.h"
#include "yoloflow/params.h"

namespace yoloflow::yolo11_loss {

// box, cls, dfl, topk, alpha, beta with Ultralytics' defaults.
void add_loss_params(Schema& s);
void read_loss_params(const Params& p, LossGains& gains, AssignerOptions& assigner);

}  // namespace yoloflow::yolo11_loss
