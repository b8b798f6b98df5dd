#pragma once
// YOLO11-seg's head: the detection head plus, per level, a branch of mask coefficients (cv4)
// and, on the finest level, the prototype masks they weight (proto), under the state-dict
// names of Ultralytics' Segment ("model.23.cv4.<level>.<i>", "model.23.proto.<module>").
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "blocks.h"

namespace yoloflow::yolo11 {

// Prototype masks at twice the finest level's resolution (1/4 of the input): Conv 3x3, a 2x2
// stride-2 transposed convolution, Conv 3x3, Conv 1x1 to `masks` channels.
class Proto : public torch::nn::Module {
 public:
  Proto(std::int64_t c_in, std::int64_t c_hidden, std::int64_t masks);
  Tensor forward(const Tensor& x);
  GraphValue emit(GraphBuilder& g, const GraphValue& x, const std::string& name, MapSize size) const;

 private:
  std::shared_ptr<Conv> cv1_, cv2_, cv3_;
  torch::nn::ConvTranspose2d upsample_{nullptr};
};

class Segment : public Detect {
 public:
  // `protos`: the prototype branch's hidden channels (256 scaled by the model's width).
  Segment(std::int64_t nc, std::int64_t masks, std::int64_t protos, const std::vector<std::int64_t>& ch,
          const std::vector<std::int64_t>& strides);
  // (B, masks, anchors) over the levels' anchors in order, as the box and class outputs.
  Tensor mask_coefficients(const std::vector<Tensor>& xs);
  // (B, masks, H/4, W/4) from the finest level.
  Tensor prototypes(const Tensor& finest);
  // Written into an export graph: the detection output with the mask coefficients appended,
  // (B, 4 + nc + masks, anchors), and the prototypes (B, masks, H/4, W/4), as Ultralytics'
  // Segment exports them (output0, output1).
  std::pair<GraphValue, GraphValue> emit_segment(GraphBuilder& g, const std::vector<GraphValue>& xs,
                                                 const std::string& name, const std::vector<MapSize>& sizes) const;
  std::int64_t masks, protos;

 private:
  std::shared_ptr<HeadBranchList> cv4_;
  std::shared_ptr<Proto> proto_;
};

}  // namespace yoloflow::yolo11
