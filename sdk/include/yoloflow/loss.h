#pragma once
// Loss plugins (LibTorch): what the train sink minimises. The built-in `yolo11_detection` is
// Ultralytics' YOLO11 detection loss (task-aligned assigner, CIoU box, BCE class and DFL
// terms); a loss plugin replaces it for a whole run, validation losses included.
//
// Pipeline JSON, inside the train sink's params:
//   "loss": {"plugin": "yolo11_detection", "params": {"box": 7.5, "cls": 0.5, "dfl": 1.5}}
//
// compute() runs inside the training step, which on CUDA may be captured as a CUDA graph and
// replayed (the train sink's cuda_graph): it must not synchronise with the host (no .item(),
// no data-dependent shapes, no host branches on tensor values) and must give the same shapes
// for the same input shapes. Parameters it reads in configure() are baked into a captured
// graph; the sink captures another one when a scheduled parameter of the loss changes.
#include <map>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>  // at::Tensor; see optimizer.h

#include "yoloflow/component.h"
#include "yoloflow/error.h"
#include "yoloflow/head.h"
#include "yoloflow/model.h"  // ModelOutput, what compute() reads

namespace yoloflow {

// The batch's targets as a loss reads them: every named target array of the batch
// (sample.h's targets::), as a tensor on the training device. Per-instance arrays are padded
// per image to the same M rows, in the same order:
//   "boxes"         (B, M, 5) float [cls, cx, cy, w, h], normalised to 0..1 by the image width
//                   and height; rows with cls < 0 are padding (M is fixed for a captured step);
//   "keypoints"     (B, M, K, 3) [x, y, visible], x and y normalised, padding rows 0;
//   any other (N, ...) array of the batch: (B, M, ...), padding rows 0;
// per-image arrays keep their shape: "image_classes" (B,) (-1: none).
struct LossTargets {
  std::map<std::string, at::Tensor> tensors;

  bool has(const std::string& name) const { return tensors.count(name) != 0; }
  // The named targets; throws yoloflow::Error naming those the batch has when it is missing
  // (a batcher that does not pack them, or a chain that dropped them).
  const at::Tensor& get(const std::string& name) const {
    auto it = tensors.find(name);
    if (it == tensors.end()) throw Error("the batch has no '" + name + "' targets (it has: " + key_list(tensors, "none") + ")");
    return it->second;
  }
  const at::Tensor& boxes() const { return get("boxes"); }
};

struct LossOutput {
  // Scalar to backpropagate: the batch's loss times its number of images (Ultralytics'
  // convention, which the optimizer's lr0 and weight decay are tuned for).
  at::Tensor total;
  // (K,) detached, one value per item_names() entry, for the progress lines, monitors and
  // results.csv (train/<name>_loss, val/<name>_loss); per image, not times the batch size.
  at::Tensor items;
  // () detached, optional: the count `total` and `items` were divided by before its floor
  // (the detection loss's target-score sum). Given, a batch split into micro-batches is
  // normalised by the whole batch's count, exactly as one pass would be; undefined, each
  // micro-batch's loss is weighted by its share of the images.
  at::Tensor normaliser;
};

class Loss : public Component {
 public:
  ~Loss() override = default;
  // Called once, after configure(), with the model's head: task, classes, DFL bins, strides
  // and the extra outputs. A loss refuses (throws yoloflow::Error) a head it cannot train:
  // another task, or an output it needs missing.
  virtual void setup(const HeadDescription& head) = 0;
  // Names of the logged components, in the order of LossOutput::items (e.g. box, cls, dfl).
  virtual std::vector<std::string> item_names() const = 0;
  // `output`: the model's training output (model.h: levels, and the head's extras by name).
  // `targets`: the batch's named targets (LossTargets). The image size is the level shapes
  // times the strides. `min_normaliser` is the floor of LossOutput::normaliser: 1 for a whole
  // batch, a micro-batch's share of the batch's images in a data-parallel run, so that the
  // floors add up to the whole batch's.
  virtual LossOutput compute(const ModelOutput& output, const LossTargets& targets, double min_normaliser) = 0;
};

}  // namespace yoloflow
