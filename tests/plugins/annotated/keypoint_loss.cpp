// The annotated test plugin's loss: a loss that declares it needs keypoints, as a pose loss does,
// so that pipelines whose stages drop them are refused before training. Its value is the mean
// square of the model's raw outputs (it trains nothing in particular).
#include <torch/torch.h>

#include "yoloflow/loss.h"
#include "yoloflow/plugin.h"

namespace yoloflow::test_annotated {

namespace {

class KeypointProbe final : public Loss {
 public:
  void configure(const Params&, const StageContext&) override {}
  void setup(const DetectionHead&) override {}
  std::vector<std::string> item_names() const override { return {"square"}; }
  LossOutput compute(const std::vector<at::Tensor>& levels, const at::Tensor& targets, double) override {
    auto sum = torch::zeros({}, levels[0].options().dtype(torch::kFloat));
    std::int64_t count = 0;
    for (const auto& l : levels) {
      sum = sum + l.to(torch::kFloat).pow(2).sum();
      count += l.numel();
    }
    const auto loss = sum / static_cast<double>(count);
    LossOutput out;
    out.total = loss * static_cast<double>(targets.size(0));
    out.items = loss.detach().reshape({1});
    return out;
  }
};

}  // namespace

void register_keypoint_loss(Registrar& r) {
  r.add_loss<KeypointProbe>("keypoint_probe", Schema(), "Needs boxes and keypoints; mean square of the outputs (test plugin).",
                            needs(Field::Boxes | Field::Keypoints));
}

}  // namespace yoloflow::test_annotated
