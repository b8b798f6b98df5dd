// Registers `segmentation`, the evaluator of instance segmentation: box and mask P, R, mAP50 and
// mAP50-95 as Ultralytics 8.4's SegmentationValidator computes them (the detection evaluator's
// matching and scoring over the boxes' IoU and over the masks' IoU, mask_overlap.h), in
// Ultralytics' results.csv columns, fitness box mAP50-95 + mask mAP50-95.
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "../detection/batch_labels.h"
#include "../detection/detection_metrics.h"
#include "mask_overlap.h"
#include "yoloflow/error.h"
#include "yoloflow/evaluator.h"
#include "yoloflow/fields.h"
#include "yoloflow/plugin.h"

namespace yoloflow::segmentation_eval {
namespace {

using detection_eval::DetectionMetrics;
using detection_eval::ImageLabels;
using detection_eval::MetricsResult;

// The batch's masks, in the two layouts a batcher packs (as the segmentation loss reads them).
constexpr const char* kImageMasks = "image_masks";
constexpr const char* kInstanceMasks = "masks";

class SegmentationEvaluator final : public Evaluator {
 public:
  void setup(const HeadDescription& head) override {
    if (head.nc < 1) throw Error("segmentation: the model's head has " + std::to_string(head.nc) + " classes");
    const HeadOutput* coefficients = head.output("mask_coefficients");
    const HeadOutput* prototypes = head.output("prototypes");
    if (coefficients == nullptr || !coefficients->per_anchor || prototypes == nullptr || prototypes->per_anchor) {
      throw InvalidInput("segmentation evaluates heads with per-anchor 'mask_coefficients' and per-image 'prototypes' "
                         "(a YOLO11-seg model, e.g. yolo11n-seg); the model's '" + head.task +
                         "' head has neither (its evaluator is 'detection')");
    }
    boxes_ = std::make_unique<DetectionMetrics>(head.nc);
    masks_ = std::make_unique<DetectionMetrics>(head.nc);
  }

  std::vector<std::string> columns() const override {
    return {"metrics/precision(B)", "metrics/recall(B)", "metrics/mAP50(B)", "metrics/mAP50-95(B)",
            "metrics/precision(M)", "metrics/recall(M)", "metrics/mAP50(M)", "metrics/mAP50-95(M)"};
  }

  std::vector<MetricColumn> table() const override {
    return {{"precision", "Box(P", "P", false},
            {"recall", "R", "R", false},
            {"mAP50", "mAP50", "mAP50", true},
            {"mAP50-95", "mAP50-95)", "mAP50-95", true},
            {"mask_precision", "Mask(P", "Mask P", false},
            {"mask_recall", "R", "Mask R", false},
            {"mask_mAP50", "mAP50", "Mask mAP50", true},
            {"mask_mAP50-95", "mAP50-95)", "Mask mAP50-95", true}};
  }

  void reset() override {
    require();
    boxes_->reset();
    masks_->reset();
  }

  void add_batch(const Batch& batch, const std::vector<ImagePredictions>& predictions) override {
    require();
    if (predictions.size() != static_cast<std::size_t>(batch.size)) {
      throw Error("segmentation: " + std::to_string(predictions.size()) + " images' predictions for a batch of " +
                  std::to_string(batch.size));
    }
    const std::vector<ImageLabels> labels = detection_eval::labels_per_image(batch);
    const torch::Tensor planes = mask_planes(batch);
    for (std::size_t i = 0; i < labels.size(); ++i) {
      const ImagePredictions& p = predictions[i];
      boxes_->add_image(p.boxes, labels[i].labels);
      const auto coefficients = p.extras.find("mask_coefficients");
      const auto prototypes = p.extras.find("prototypes");
      if (coefficients == p.extras.end() || prototypes == p.extras.end()) {
        throw Error("segmentation: image " + std::to_string(i) + "'s predictions carry no 'mask_coefficients' and "
                    "'prototypes'");
      }
      const torch::Tensor& proto = prototypes->second;
      if (proto.dim() != 3) {
        throw Error("segmentation: image " + std::to_string(i) + "'s prototypes are " + std::to_string(proto.dim()) +
                    "-D, not (C, h, w)");
      }
      const auto n = p.boxes.defined() ? p.boxes.size(0) : 0;
      const auto m = labels[i].labels.size(0);
      torch::Tensor iou = torch::zeros({m, n});
      if (n > 0 && m > 0) {
        const auto predicted =
            predicted_masks(proto, coefficients->second, p.boxes.narrow(1, 0, 4), batch.height, batch.width);
        iou = mask_iou(label_masks_at(image_planes(batch, planes, i, labels[i]), proto.size(1), proto.size(2)),
                       predicted);
      }
      masks_->add_image(p.boxes, labels[i].labels, iou);
    }
  }

  Evaluation compute() override {
    require();
    const MetricsResult b = boxes_->compute(), m = masks_->compute();
    Evaluation e;
    e.columns = {{"metrics/precision(B)", b.precision}, {"metrics/recall(B)", b.recall},
                 {"metrics/mAP50(B)", b.map50},         {"metrics/mAP50-95(B)", b.map50_95},
                 {"metrics/precision(M)", m.precision}, {"metrics/recall(M)", m.recall},
                 {"metrics/mAP50(M)", m.map50},         {"metrics/mAP50-95(M)", m.map50_95}};
    // Ultralytics 8.4's SegmentMetrics: the box fitness plus the mask fitness (mAP50-95 each).
    e.fitness = b.fitness + m.fitness;
    e.images = b.images;
    e.instances = b.instances;
    e.all = {b.precision, b.recall, b.map50, b.map50_95, m.precision, m.recall, m.map50, m.map50_95};
    // Both score the classes with labels, in class order: the rows pair up.
    for (std::size_t k = 0; k < b.per_class.size() && k < m.per_class.size(); ++k) {
      const auto& cb = b.per_class[k];
      const auto& cm = m.per_class[k];
      e.per_class.push_back({cb.cls, cb.images, cb.instances,
                             {cb.precision, cb.recall, cb.ap50, cb.ap50_95, cm.precision, cm.recall, cm.ap50, cm.ap50_95}});
    }
    return e;
  }

  // Ultralytics' Box and Mask curve families.
  std::vector<MatchedDetections> matched() const override {
    if (!boxes_) return {};
    return {boxes_->matched("Box"), masks_->matched("Mask")};
  }

 private:
  void require() const {
    if (!boxes_) throw Error("segmentation: used before setup()");
  }

  // The batch's mask target as a float tensor (a view of its values), checked against the batch.
  static torch::Tensor mask_planes(const Batch& batch) {
    const bool overlap = batch.has_target(kImageMasks);
    if (!overlap && !batch.has_target(kInstanceMasks)) {
      throw InvalidInput("segmentation: the validation batch has no masks ('" + std::string(kImageMasks) + "' or '" +
                         kInstanceMasks + "' targets; it has: " + key_list(batch.targets, "none") +
                         "): give the val batcher masks=true (collate rasterises the instances' outlines)");
    }
    const TargetArray& t = batch.target(overlap ? kImageMasks : kInstanceMasks);
    const std::int64_t planes = overlap ? batch.size : batch.num_boxes();
    if (t.shape.size() != 3 || t.shape[0] != planes ||
        static_cast<std::int64_t>(t.values.size()) != t.shape[0] * t.shape[1] * t.shape[2]) {
      throw InvalidInput("segmentation: the batch's '" + std::string(overlap ? kImageMasks : kInstanceMasks) +
                         "' should be " + std::to_string(planes) + " planes (one per " +
                         (overlap ? "image" : "instance") + ") of h x w values");
    }
    return torch::from_blob(const_cast<float*>(t.values.data()), {t.shape[0], t.shape[1], t.shape[2]}, torch::kFloat);
  }

  // Image i's label masks (M, H', W'), 0/1: from its overlap plane (value k + 1 = its label k) or
  // from the per-instance planes of its labels' rows.
  static torch::Tensor image_planes(const Batch& batch, const torch::Tensor& planes, std::size_t i,
                                    const ImageLabels& labels) {
    if (batch.has_target(kImageMasks)) {
      const auto m = static_cast<std::int64_t>(labels.rows.size());
      const auto index = torch::arange(1, m + 1, torch::kFloat).view({m, 1, 1});
      return planes[static_cast<std::int64_t>(i)].unsqueeze(0).eq(index).to(torch::kFloat);
    }
    const auto rows = torch::tensor(labels.rows, torch::kLong);
    return planes.index_select(0, rows);
  }

  std::unique_ptr<DetectionMetrics> boxes_, masks_;
};

void register_evaluators(Registrar& r) {
  r.add_evaluator<SegmentationEvaluator>(
      "segmentation", Schema(),
      "Box and mask precision, recall, mAP50 and mAP50-95 as Ultralytics' segmentation validator computes them "
      "(masks compared at the prototypes' size, 1/4 of the input); fitness box mAP50-95 + mask mAP50-95; "
      "results.csv columns metrics/precision(B) ... metrics/mAP50-95(B), metrics/precision(M) ... "
      "metrics/mAP50-95(M). The val batcher gives the masks (collate masks=true).",
      // The instances' outlines reach the val batcher, which rasterises them into the masks.
      needs(Field::Boxes | Field::Polygons));
}

}  // namespace
}  // namespace yoloflow::segmentation_eval

YOLOFLOW_PLUGIN("segmentation_evaluator", "1.0.0", yoloflow::segmentation_eval::register_evaluators)
