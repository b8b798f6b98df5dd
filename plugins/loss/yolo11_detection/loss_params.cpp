#include "loss_params.h"

namespace yoloflow::yolo11_loss {

void add_loss_params(Schema& s) {
  s.add_float("box", 7.5).min(0.0).doc("Box (CIoU) loss gain (Ultralytics' box).");
  s.add_float("cls", 0.5).min(0.0).doc("Class (BCE) loss gain (Ultralytics' cls).");
  s.add_float("dfl", 1.5).min(0.0).doc("Distribution focal loss gain (Ultralytics' dfl).");
  s.add_int("topk", 10).range(1, 1000).fixed().doc("Task-aligned assigner: candidate anchors kept per ground-truth box.");
  s.add_float("alpha", 0.5).min(0.0).fixed().doc(
      "Task-aligned assigner: exponent of the class score in the alignment metric score^alpha * IoU^beta.");
  s.add_float("beta", 6.0).min(0.0).fixed().doc("Task-aligned assigner: exponent of the IoU in the alignment metric.");
}

void read_loss_params(const Params& p, LossGains& gains, AssignerOptions& assigner) {
  gains = LossGains{p.get_float("box"), p.get_float("cls"), p.get_float("dfl")};
  assigner.topk = static_cast<int>(p.get_int("topk"));
  assigner.alpha = p.get_float("alpha");
  assigner.beta = p.get_float("beta");
}

}  // namespace yoloflow::yolo11_loss
