#pragma once
// Model plugins (LibTorch): a detector with a YOLO-style anchor-free head.
#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "yoloflow/component.h"
#include "yoloflow/detection_head.h"
#include "yoloflow/error.h"
#include "yoloflow/graph_builder.h"

namespace yoloflow {

// Decoded predictions for every anchor: boxes xyxy in input pixels, class probabilities.
struct Detections {
  torch::Tensor boxes;   // (B, A, 4)
  torch::Tensor scores;  // (B, A, nc), after sigmoid
};

// One row of `yoloflow info`: the layer table.
struct LayerRow {
  int index = 0;
  std::string from;     // "-1", "[-1, 6]"
  int repeats = 1;
  std::string module;   // "Conv", "C3k2", ...
  std::string args;     // "[3, 16, 3, 2]"
  std::int64_t params = 0;
};

// configure() builds the network from the parameters ("scale", "nc", ...) and may be
// called again at epoch boundaries: it must not rebuild a network whose architecture
// parameters did not change.
class Model : public Component {
 public:
  ~Model() override = default;
  // Root module. Parameter and buffer names are those of the reference implementation's
  // state dict (e.g. "model.0.conv.weight"), which is what lets weights move to and from
  // PyTorch and what our checkpoints store.
  virtual torch::nn::Module& module() = 0;
  virtual DetectionHead head() const = 0;
  virtual std::string architecture() const = 0;  // "yolo11n"
  // Training output: per level (B, 4*reg_max + nc, H, W), raw (no DFL, no sigmoid).
  // `images` is float in [0, 1], NCHW (any memory format), H and W multiples of max stride.
  virtual std::vector<torch::Tensor> forward_train(const torch::Tensor& images) = 0;
  // Decodes training-format outputs: DFL expectation, anchors, strides, sigmoid.
  virtual Detections decode(const std::vector<torch::Tensor>& levels) = 0;
  virtual std::vector<LayerRow> layers() const = 0;
  // Recompute activations of these parts in backward instead of storing them: less memory,
  // same results.
  virtual void set_activation_checkpointing(bool backbone, bool neck) = 0;
  // Writes the eval-mode network, decode included, into `g` (`yoloflow export`): batch norm
  // folded into the convolutions, output (B, 4 + nc, anchors) as GraphBuilder::output says.
  // The default says the model cannot be exported.
  virtual void export_graph(GraphBuilder& g) {
    (void)g;
    throw Error("the model '" + architecture() + "' cannot be exported: its plugin does not implement export_graph",
                kExitInvalid);
  }
};

}  // namespace yoloflow
