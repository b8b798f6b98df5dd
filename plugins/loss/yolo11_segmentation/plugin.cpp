// Registers `yolo11_segmentation`, YOLO11-seg's training loss (Ultralytics' v8SegmentationLoss):
// the detection loss's box, class and DFL terms (plugins/loss/yolo11_detection) and the mask term
// (mask_loss.h) from the head's mask coefficients and prototypes and the batch's masks.
#include <memory>
#include <string>

#include "../yolo11_detection/detection_loss.h"
#include "../yolo11_detection/loss_params.h"
#include "mask_loss.h"
#include "yoloflow/error.h"
#include "yoloflow/fields.h"
#include "yoloflow/loss.h"
#include "yoloflow/model.h"
#include "yoloflow/plugin.h"

namespace yoloflow::yolo11_seg_loss {
namespace {

using yolo11_loss::AssignedTargets;
using yolo11_loss::AssignerOptions;
using yolo11_loss::DetectionLoss;
using yolo11_loss::LossGains;
using yolo11_loss::add_loss_params;
using yolo11_loss::read_loss_params;

// The batch's masks, in one of two layouts (a batcher packs the one its overlap setting asks for):
// per image, the value k + 1 where the image's k-th instance is on top (Ultralytics'
// overlap_mask=True); or per instance, 1 inside, 0 outside (overlap_mask=False).
constexpr const char* kImageMasks = "image_masks";
constexpr const char* kInstanceMasks = "masks";

class Yolo11SegmentationLoss final : public Loss {
 public:
  static Schema schema() {
    Schema s;
    add_loss_params(s);  // box (which weights the mask term too, as Ultralytics' does), cls, dfl, assigner
    s.add_int("mask_chunk", 67108864).range(65536, 1LL << 34).fixed().doc(
        "Most predicted-mask values (positives x batch x mask pixels) computed at once: the mask term's "
        "memory, whatever the number of instances; larger is fewer, bigger kernels.");
    s.add_enum("mask_backend", {"tensor", "kernels"}, "tensor").doc(
        "How each positive's mask term is computed: tensor = tensor operations, a mask_chunk of slots at a time; "
        "kernels = on CUDA, yoloflow's kernels over each GT box's pixels only: time and memory follow the boxes' "
        "areas (YOLO11n-seg batch 32 on an H100: 41.9 against 68.7 ms a captured step, 822.8 against 486.8 img/s "
        "over whole epochs; docs/performance.md), for builds with a CUDA compiler, tensor operations elsewhere.");
    return s;
  }

  void configure(const Params& p, const StageContext&) override {
    read_loss_params(p, gains_, assigner_);
    chunk_ = p.get_int("mask_chunk");
    backend_ = p.get_string("mask_backend") == "kernels" ? MaskBackend::kernels : MaskBackend::tensor;
    if (backend_ == MaskBackend::kernels && !mask_kernels_built()) {
      throw InvalidInput(p.where() + ".mask_backend: 'kernels' needs a yoloflow built with a CUDA compiler beside a "
                         "CUDA LibTorch (this one has no CUDA kernels); use 'tensor'");
    }
    if (loss_) loss_->set_gains(gains_);
  }

  void setup(const HeadDescription& head) override {
    const HeadOutput* coefficients = head.output("mask_coefficients");
    const HeadOutput* prototypes = head.output("prototypes");
    if (coefficients == nullptr || !coefficients->per_anchor || prototypes == nullptr || prototypes->per_anchor) {
      throw InvalidInput("yolo11_segmentation trains heads with per-anchor 'mask_coefficients' and per-image 'prototypes' "
                         "(a YOLO11-seg model, e.g. yolo11n-seg); the model's '" + head.task + "' head has " +
                         (head.outputs.empty() ? std::string("neither") : "'" + head.outputs.front().name + "'"));
    }
    for (const auto& o : head.outputs) {
      if (o.name != "mask_coefficients" && o.name != "prototypes") {
        throw InvalidInput("yolo11_segmentation trains boxes, classes and masks, but the model's '" + head.task +
                           "' head also gives '" + o.name + "'");
      }
    }
    loss_ = std::make_unique<DetectionLoss>(head, gains_, assigner_);
  }

  // Ultralytics 8.4.56's names and order for segmentation (its semantic term is for models with
  // a semantic branch, which YOLO11-seg has not: always 0, kept so that results.csv has its columns).
  std::vector<std::string> item_names() const override { return {"box", "seg", "cls", "dfl", "sem"}; }

  LossOutput compute(const ModelOutput& output, const LossTargets& targets, double min_normaliser) override {
    if (!loss_) throw Error("yolo11_segmentation: compute() before setup()");
    MaskTargets masks;
    if (targets.has(kImageMasks)) {
      masks.overlap = targets.get(kImageMasks);
    } else if (targets.has(kInstanceMasks)) {
      masks.separate = targets.get(kInstanceMasks);
    } else {
      throw InvalidInput("yolo11_segmentation: the batch has no masks ('" + std::string(kImageMasks) + "' or '" +
                         kInstanceMasks + "' targets; it has: " + key_list(targets.tensors, "none") +
                         "): give the batcher masks=true (collate rasterises the instances' outlines)");
    }
    const auto& boxes = targets.boxes();
    AssignedTargets assigned;
    yolo11_loss::LossResult det = (*loss_)(output.levels, boxes, min_normaliser, &assigned);
    MaskLossInputs in;
    in.coefficients = output.extra("mask_coefficients").transpose(1, 2);  // (B, A, 32)
    in.prototypes = output.extra("prototypes");
    in.fg_mask = assigned.fg_mask;
    in.gt_index = assigned.gt_index;
    in.gt_boxes = assigned.bboxes;
    in.img_h = assigned.img_h;
    in.img_w = assigned.img_w;
    in.slots = static_cast<std::int64_t>(loss_->assigner().topk) * boxes.size(1);
    in.rows = boxes.size(1);
    const auto seg = mask_loss(in, masks, chunk_, backend_) * gains_.box;
    const auto B = static_cast<double>(boxes.size(0));
    // det.items: box, cls, dfl (gained); det.total = their sum x B.
    const auto zero = torch::zeros({}, seg.options());
    LossOutput out;
    out.total = det.total + seg * B;
    out.items = torch::stack({det.items[0], seg.detach(), det.items[1], det.items[2], zero});
    out.normaliser = det.score_sum;
    return out;
  }

 private:
  LossGains gains_;
  AssignerOptions assigner_;
  std::int64_t chunk_ = 67108864;
  MaskBackend backend_ = MaskBackend::tensor;
  std::unique_ptr<DetectionLoss> loss_;
};

void register_losses(Registrar& r) {
  r.add_loss<Yolo11SegmentationLoss>(
      "yolo11_segmentation", Yolo11SegmentationLoss::schema(),
      "YOLO11-seg loss (Ultralytics' v8SegmentationLoss): the detection loss's box, class and DFL terms and the "
      "mask term (binary cross-entropy of each positive anchor's mask inside its GT box), in bounded memory.",
      // The instances' outlines reach the batcher, which rasterises them into the masks.
      needs(Field::Boxes | Field::Polygons));
}

}  // namespace
}  // namespace yoloflow::yolo11_seg_loss

YOLOFLOW_PLUGIN("yolo11_segmentation", "1.0.0", yoloflow::yolo11_seg_loss::register_losses)
