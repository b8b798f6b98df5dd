// The annotated test plugin's loss: a loss that declares it needs keypoints, as a pose loss does,
// so that pipelines whose stages drop them are refused before training, and that reads the
// batch's named targets as a pose loss would. Its value is the mean square of the model's raw
// outputs (levels and extras; it trains nothing in particular); its second logged value is the
// visible keypoints per image in the "keypoints" targets (B, M, K, 3), so that a test sees them
// arrive, padded per image, through the trainer.
#include <torch/torch.h>

#include "yoloflow/loss.h"
#include "yoloflow/model.h"
#include "yoloflow/plugin.h"

namespace yoloflow::test_annotated {

namespace {

class KeypointProbe final : public Loss {
 public:
  void configure(const Params&, const StageContext&) override {}
  void setup(const HeadDescription&) override {}
  std::vector<std::string> item_names() const override { return {"square", "visible"}; }
  LossOutput compute(const ModelOutput& output, const LossTargets& targets, double) override {
    const auto& levels = output.levels;
    auto sum = torch::zeros({}, levels[0].options().dtype(torch::kFloat));
    std::int64_t count = 0;
    for (const auto& l : levels) {
      sum = sum + l.to(torch::kFloat).pow(2).sum();
      count += l.numel();
    }
    for (const auto& [name, e] : output.extras) {
      sum = sum + e.to(torch::kFloat).pow(2).sum();
      count += e.numel();
    }
    const auto& keypoints = targets.get("keypoints");  // (B, M, K, 3)
    const double images = static_cast<double>(targets.boxes().size(0));
    const auto visible = (keypoints.select(3, 2) > 0).sum().to(torch::kFloat) / images;
    const auto loss = sum / static_cast<double>(count);
    LossOutput out;
    out.total = loss * images;
    out.items = torch::stack({loss.detach(), visible.to(loss.device())});
    return out;
  }
};

}  // namespace

void register_keypoint_loss(Registrar& r) {
  r.add_loss<KeypointProbe>("keypoint_probe", Schema(),
                            "Needs boxes and keypoints; mean square of the outputs, and the visible keypoints per image "
                            "(test plugin).",
                            needs(Field::Boxes | Field::Keypoints));
}

}  // namespace yoloflow::test_annotated
