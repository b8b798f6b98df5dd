// A loss whose value a test can predict: the mean square of the model's raw outputs times
// `weight`, logged as "square". A second logged value, "weight", is the weight it was last
// configured with, so that a test sees a schedule reach the loss. It has no normaliser, so
// micro-batches weigh by their share of the images.
#include "yoloflow/loss.h"
#include "yoloflow/model.h"
#include "yoloflow/plugin.h"

#include <torch/torch.h>

namespace {

class SquareLoss final : public yoloflow::Loss {
 public:
  void configure(const yoloflow::Params& p, const yoloflow::StageContext&) override { weight_ = p.get_float("weight"); }
  void setup(const yoloflow::HeadDescription&) override {}
  std::vector<std::string> item_names() const override { return {"square", "weight"}; }
  yoloflow::LossOutput compute(const yoloflow::ModelOutput& output, const yoloflow::LossTargets& targets, double) override {
    const auto& levels = output.levels;
    auto sum = torch::zeros({}, levels[0].options().dtype(torch::kFloat));
    std::int64_t count = 0;
    for (const auto& l : levels) {
      sum = sum + l.to(torch::kFloat).pow(2).sum();
      count += l.numel();
    }
    const auto loss = sum / static_cast<double>(count) * weight_;
    yoloflow::LossOutput out;
    out.total = loss * static_cast<double>(targets.boxes().size(0));
    out.items = torch::stack({loss.detach(), torch::full({}, weight_, loss.options())});
    return out;
  }

 private:
  double weight_ = 1.0;
};

void register_probe(yoloflow::Registrar& r) {
  yoloflow::Schema s;
  s.add_float("weight", 1.0).greater_than(0.0).doc("Factor of the mean square.");
  r.add_loss<SquareLoss>("square_probe", s, "Mean square of the raw outputs (tests).");
}

}  // namespace

YOLOFLOW_PLUGIN("loss_probe", "1.0.0", register_probe)
