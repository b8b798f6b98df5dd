// centre_cell: a detection loss written against yoloflow/loss.h alone, in the manner of
// CenterNet and FCOS's centre sampling rather than YOLO11's task-aligned assignment: every
// ground-truth box is assigned, on each output level, the one cell that holds its centre.
//   cls: binary cross-entropy of every cell's class logits against a map that is 1 at the
//        assigned cells for their box's class, 0 elsewhere;
//   box_l1: L1 distance, in strides, between the DFL expectation of the cell's four distances
//        (left, top, right, bottom) and the distances from the cell centre to the box's edges.
// Both are divided by the number of assignments (at least 1), which is also the normaliser the
// host uses to split a batch into micro-batches exactly.
//
// Everything stays on the device with fixed shapes (padding rows are masked, never filtered),
// so the training step can still be captured as a CUDA graph.
#include <cmath>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "yoloflow/error.h"
#include "yoloflow/loss.h"
#include "yoloflow/plugin.h"

namespace {

using namespace yoloflow;

class CentreCellLoss final : public Loss {
 public:
  static Schema schema() {
    Schema s;
    s.add_float("box", 1.0).min(0.0).doc("Gain of the L1 box-distance term.");
    s.add_float("cls", 1.0).min(0.0).doc("Gain of the class BCE term.");
    return s;
  }

  void configure(const Params& p, const StageContext&) override {
    box_gain_ = p.get_float("box");
    cls_gain_ = p.get_float("cls");
  }

  void setup(const HeadDescription& head) override {
    if (head.strides.empty() || head.reg_max < 2) throw Error("centre_cell: the model's head has no strides or DFL bins");
    head_ = head;
  }

  std::vector<std::string> item_names() const override { return {"box_l1", "cls"}; }

  LossOutput compute(const ModelOutput& output, const LossTargets& named, double min_normaliser) override {
    const auto& levels = output.levels;   // per level (B, 4*bins + nc, H, W), raw
    const auto& targets = named.boxes();  // (B, M, 5) [cls, cx, cy, w, h], cls < 0: padding
    const std::int64_t nc = head_.nc, bins = head_.reg_max, batch = targets.size(0);
    const auto valid = targets.select(2, 0) >= 0;                      // (B, M) real rows, not padding
    const auto valid_f = valid.to(torch::kFloat);
    const auto cls = targets.select(2, 0).clamp_min(0).to(torch::kLong);  // (B, M)
    auto box_sum = torch::zeros({}, targets.options().dtype(torch::kFloat));
    auto cls_sum = torch::zeros({}, targets.options().dtype(torch::kFloat));
    const auto project = torch::arange(bins, targets.options().dtype(torch::kFloat));
    for (std::size_t i = 0; i < levels.size(); ++i) {
      const auto level = levels[i].to(torch::kFloat);  // (B, 4*bins + nc, H, W); the loss runs in fp32
      const std::int64_t h = level.size(2), w = level.size(3), stride = head_.strides[i];
      const double img_w = static_cast<double>(w * stride), img_h = static_cast<double>(h * stride);
      // The cell holding each box's centre, and the box's edges, in pixels.
      const auto cx = targets.select(2, 1) * img_w, cy = targets.select(2, 2) * img_h;
      const auto bw = targets.select(2, 3) * img_w, bh = targets.select(2, 4) * img_h;
      const auto col = (cx / static_cast<double>(stride)).floor().clamp(0, w - 1);
      const auto row = (cy / static_cast<double>(stride)).floor().clamp(0, h - 1);
      const auto cell = (row * w + col).to(torch::kLong);  // (B, M)

      // Class map: the box's class at its cell; padding rows scatter 0, which amax ignores.
      const auto logits = level.narrow(1, 4 * bins, nc).flatten(2);  // (B, nc, H*W)
      auto target_map = torch::zeros({batch, nc * h * w}, logits.options());
      target_map.scatter_reduce_(1, cls * (h * w) + cell, valid_f, "amax");
      cls_sum = cls_sum + torch::binary_cross_entropy_with_logits(logits.flatten(1), target_map, {}, {},
                                                                  at::Reduction::Sum);

      // Distances at the assigned cells: the DFL expectation against the true ones, in strides.
      const auto distri = level.narrow(1, 0, 4 * bins).flatten(2);  // (B, 4*bins, H*W)
      const auto picked = distri.gather(2, cell.unsqueeze(1).expand({batch, 4 * bins, cell.size(1)}));
      const auto expected = (picked.view({batch, 4, bins, -1}).softmax(2) * project.view({1, 1, bins, 1})).sum(2);
      const auto ax = (col + 0.5) * static_cast<double>(stride), ay = (row + 0.5) * static_cast<double>(stride);
      const auto wanted = torch::stack({ax - (cx - bw / 2), ay - (cy - bh / 2), (cx + bw / 2) - ax, (cy + bh / 2) - ay}, 1)
                              .div(static_cast<double>(stride))
                              .clamp(0.0, static_cast<double>(bins - 1) - 0.01);  // (B, 4, M)
      box_sum = box_sum + ((expected - wanted).abs().sum(1) * valid_f).sum();
    }
    // One assignment per box and level.
    const auto assigned = valid_f.sum() * static_cast<double>(levels.size());
    const auto normaliser = assigned.clamp_min(min_normaliser);
    const auto items = torch::stack({box_sum / normaliser * box_gain_, cls_sum / normaliser * cls_gain_});
    LossOutput out;
    out.total = items.sum() * static_cast<double>(batch);
    out.items = items.detach();
    out.normaliser = assigned.detach();
    return out;
  }

 private:
  HeadDescription head_;
  double box_gain_ = 1.0;
  double cls_gain_ = 1.0;
};

void register_centre_cell(Registrar& r) {
  r.add_loss<CentreCellLoss>("centre_cell", CentreCellLoss::schema(),
                             "Example: each box assigned the cell holding its centre on every level; class BCE and "
                             "L1 of the DFL distances, per assignment.");
}

}  // namespace

YOLOFLOW_PLUGIN("example_centre_cell", "1.0.0", register_centre_cell)
