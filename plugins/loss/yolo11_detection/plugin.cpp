// Registers `yolo11_detection`, the train sink's default loss: DetectionLoss (detection_loss.h)
// behind the Loss interface, its gains and assigner as parameters.
#include <memory>

#include "detection_loss.h"
#include "loss_params.h"
#include "yoloflow/error.h"
#include "yoloflow/loss.h"
#include "yoloflow/model.h"
#include "yoloflow/plugin.h"

namespace yoloflow::yolo11_loss {
namespace {

class Yolo11DetectionLoss final : public Loss {
 public:
  static Schema schema() {
    Schema s;
    add_loss_params(s);
    return s;
  }

  void configure(const Params& p, const StageContext&) override {
    read_loss_params(p, gains_, assigner_);
    // Configured again at an epoch boundary (a scheduled gain): the assigner stays.
    if (loss_) loss_->set_gains(gains_);
  }

  // Boxes and classes only: a head with more outputs (mask coefficients, keypoints) would
  // train with those left untouched, so it is refused, naming what the loss cannot train.
  void setup(const HeadDescription& head) override {
    if (!head.outputs.empty()) {
      throw InvalidInput("yolo11_detection trains boxes and classes only, but the model's '" + head.task +
                  "' head also gives '" + head.outputs.front().name + "': choose a loss for the '" + head.task + "' task");
    }
    loss_ = std::make_unique<DetectionLoss>(head, gains_, assigner_);
  }

  std::vector<std::string> item_names() const override { return {"box", "cls", "dfl"}; }

  LossOutput compute(const ModelOutput& output, const LossTargets& targets, double min_normaliser) override {
    if (!loss_) throw Error("yolo11_detection: compute() before setup()");
    LossResult r = (*loss_)(output.levels, targets.boxes(), min_normaliser);
    return LossOutput{r.total, r.items, r.score_sum};
  }

 private:
  LossGains gains_;
  AssignerOptions assigner_;
  std::unique_ptr<DetectionLoss> loss_;
};

void register_losses(Registrar& r) {
  r.add_loss<Yolo11DetectionLoss>(
      "yolo11_detection", Yolo11DetectionLoss::schema(),
      "YOLO11 detection loss (Ultralytics' v8DetectionLoss): task-aligned assignment, CIoU box loss, BCE class "
      "loss and distribution focal loss, weighted by box, cls and dfl.");
}

}  // namespace
}  // namespace yoloflow::yolo11_loss

YOLOFLOW_PLUGIN("yolo11_detection", "1.0.0", yoloflow::yolo11_loss::register_losses)
