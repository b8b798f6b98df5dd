#pragma once
// Model plugins (LibTorch): a network with a YOLO-style anchor-free head, for any task its
// head description names (head.h): boxes and class scores on every level, and named outputs
// beside them (mask coefficients, keypoints, ...).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "yoloflow/component.h"
#include "yoloflow/head.h"
#include "yoloflow/error.h"
#include "yoloflow/graph_builder.h"

namespace yoloflow {

// The training output: what a loss computes from.
struct ModelOutput {
  // Per level (B, 4*reg_max + nc, H, W), raw (no DFL, no sigmoid).
  std::vector<torch::Tensor> levels;
  // One tensor per HeadDescription::outputs entry, by name, raw: per anchor (B, channels, A)
  // over the levels' anchors in order; per image (B, ...).
  std::map<std::string, torch::Tensor> extras;

  // The named output; throws yoloflow::Error naming those there are when it is missing.
  const torch::Tensor& extra(const std::string& name) const {
    auto it = extras.find(name);
    if (it == extras.end()) {
      throw Error("the model gave no output '" + name + "' (it gives: " + key_list(extras, "boxes and class scores only") + ")");
    }
    return it->second;
  }
};

// Whether `out` is what `head` describes for a batch of `batch` images: one level per stride,
// each (B, 4 * reg_max + nc, H, W); exactly the extras head.outputs lists, per-anchor ones
// (B, channels, A) with A the cells of all levels, per-image ones (B, ...). Empty when it is;
// else what breaks it, one line. The host checks every forward_train with it, and
// testing_torch.h's model_contract too, so a plugin author meets one rule.
inline std::string check_model_output(const ModelOutput& out, const HeadDescription& head, std::int64_t batch) {
  auto shape = [](const torch::Tensor& t) { return t.defined() ? std::string(c10::str(t.sizes())) : std::string("undefined"); };
  if (out.levels.size() != head.strides.size()) {
    return "gave " + std::to_string(out.levels.size()) + " levels, but head() lists " + std::to_string(head.strides.size()) +
           " strides";
  }
  const std::int64_t channels = 4 * static_cast<std::int64_t>(head.reg_max) + head.nc;
  std::int64_t anchors = 0;
  for (std::size_t i = 0; i < out.levels.size(); ++i) {
    const auto& l = out.levels[i];
    if (!l.defined() || l.dim() != 4 || l.size(0) != batch || l.size(1) != channels) {
      return "gave level " + std::to_string(i) + " of shape " + shape(l) + "; head() says (" + std::to_string(batch) +
             ", " + std::to_string(channels) + ", H, W) (4 * reg_max + nc channels)";
    }
    anchors += l.size(2) * l.size(3);
  }
  for (const auto& o : head.outputs) {
    auto it = out.extras.find(o.name);
    if (it == out.extras.end() || !it->second.defined()) return "gave no output '" + o.name + "', which head() lists";
    const auto& e = it->second;
    const bool fits = o.per_anchor ? e.dim() == 3 && e.size(0) == batch && e.size(1) == o.channels && e.size(2) == anchors
                                   : e.dim() >= 1 && e.size(0) == batch;
    if (!fits) {
      return "gave output '" + o.name + "' of shape " + shape(e) + "; head() says " +
             (o.per_anchor ? "(" + std::to_string(batch) + ", " + std::to_string(o.channels) + ", " + std::to_string(anchors) +
                                 ") (B, channels, anchors of all levels)"
                           : "(" + std::to_string(batch) + ", ...)");
    }
  }
  for (const auto& [name, e] : out.extras) {
    if (head.output(name) == nullptr) return "gave output '" + name + "', which head() does not list";
  }
  return "";
}

// Decoded predictions for every anchor, whatever the task: boxes xyxy in input pixels, class
// probabilities, and the head's other outputs decoded (per anchor (B, A, channels), e.g.
// keypoints in input pixels; per image (B, ...), e.g. mask prototypes).
struct Predictions {
  torch::Tensor boxes;   // (B, A, 4)
  torch::Tensor scores;  // (B, A, nc), after sigmoid
  std::map<std::string, torch::Tensor> extras;
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
  // Task, classes, strides and the outputs beside boxes and scores: forward_train's extras
  // must be exactly these (the host checks).
  virtual HeadDescription head() const = 0;
  virtual std::string architecture() const = 0;  // "yolo11n"
  // Training output (ModelOutput). `images` is float in [0, 1], NCHW (any memory format), H
  // and W multiples of max stride.
  virtual ModelOutput forward_train(const torch::Tensor& images) = 0;
  // Decodes training-format outputs: DFL expectation, anchors, strides, sigmoid; and the
  // extras as the task needs them.
  virtual Predictions decode(const ModelOutput& output) = 0;
  virtual std::vector<LayerRow> layers() const = 0;
  // Recompute activations of these parts in backward instead of storing them: less memory,
  // same results.
  virtual void set_activation_checkpointing(bool backbone, bool neck) = 0;
  // Writes the eval-mode network, decode included, into `g` (`yoloflow export`): batch norm
  // folded into the convolutions, output (B, 4 + nc, anchors) as GraphBuilder::output says
  // (a head with per-anchor extras appends their channels: (B, 4 + nc + extras, anchors)).
  // The default says the model cannot be exported.
  virtual void export_graph(GraphBuilder& g) {
    (void)g;
    throw Error("the model '" + architecture() + "' cannot be exported: its plugin does not implement export_graph",
                kExitInvalid);
  }
};

}  // namespace yoloflow
