#pragma once
// What a model's head predicts: the task, the classes, the box regression, the strides of its
// output levels and the outputs it adds beside boxes and class scores (mask coefficients and
// prototypes for segmentation, keypoints for pose, an angle for oriented boxes). A model
// reports it (model.h), a loss is set up from it (loss.h), an evaluator reads it
// (evaluator.h). Plain data, no LibTorch.
#include <cstdint>
#include <string>
#include <vector>

namespace yoloflow {

// One named output beside the boxes and class scores.
struct HeadOutput {
  std::string name;  // e.g. "mask_coefficients", "prototypes", "keypoints"
  // Per anchor (true): ModelOutput::extras[name] is (B, channels, A) over the anchors of every
  // level in order, and Predictions::extras[name] (B, A, channels) after decode. Per image
  // (false): any (B, ...) tensor, the same in both (e.g. mask prototypes (B, 32, H/4, W/4)).
  bool per_anchor = true;
  std::int64_t channels = 0;  // per anchor: the values each anchor has (32 coefficients, 17 x 3 keypoints)
  std::string doc;            // one line for `yoloflow info` and error messages
};

struct HeadDescription {
  int nc = 80;                        // classes
  int reg_max = 16;                   // DFL bins per box side
  std::vector<std::int64_t> strides;  // per output level, e.g. {8, 16, 32}
  // The task the head is for: "detect", "segment", "pose", "obb", "classify" (Ultralytics'
  // names), or a plugin's own. Components check it in setup and refuse what they cannot serve.
  std::string task = "detect";
  std::vector<HeadOutput> outputs;    // beside boxes and class scores, in a fixed order

  // The named output, or null.
  const HeadOutput* output(const std::string& name) const {
    for (const auto& o : outputs) {
      if (o.name == name) return &o;
    }
    return nullptr;
  }
};

}  // namespace yoloflow
