#pragma once
// An exported ONNX file seen as a Model, so that validation (validation_pipeline.h) and
// prediction (predictor.h) run it exactly as they run trained weights: same images, same
// letterbox, same NMS and metrics. The file's output is already decoded, so forward_train
// returns it as the one "level" and decode() only converts it to corner boxes and scores.
// Batches are cut to the file's batch size (the last one padded), and images smaller than a
// fixed-shape file's input are padded at the bottom and right (grey 114, as the letterbox
// pads), which moves no box.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "yoloflow/model.h"

namespace yoloflow::core {

// Runs an ONNX file on (B, 3, H, W) float32 CPU images; returns (B, 4 + nc, anchors).
class OnnxRunner {
 public:
  virtual ~OnnxRunner() = default;
  virtual torch::Tensor run(const torch::Tensor& images) = 0;
};

struct ExportedModelShape {
  HeadDescription head;
  std::string architecture;        // what the messages call it ("yolo11n (ONNX int8 QDQ)")
  std::int64_t batch = 0;          // 0: any
  std::int64_t height = 0, width = 0;  // 0: any (a --dynamic file)
};

class ExportedModel final : public Model {
 public:
  ExportedModel(std::unique_ptr<OnnxRunner> runner, ExportedModelShape shape);

  torch::nn::Module& module() override { return module_; }
  HeadDescription head() const override { return shape_.head; }
  std::string architecture() const override { return shape_.architecture; }
  ModelOutput forward_train(const torch::Tensor& images) override;
  Predictions decode(const ModelOutput& output) override;
  std::vector<LayerRow> layers() const override { return {}; }
  void set_activation_checkpointing(bool, bool) override {}

 private:
  std::unique_ptr<OnnxRunner> runner_;
  ExportedModelShape shape_;
  torch::nn::Module module_;  // no parameters: the weights live in the file
};

}  // namespace yoloflow::core
