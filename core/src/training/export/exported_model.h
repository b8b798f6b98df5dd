#pragma once
// An exported ONNX file seen as a Model, so that validation (validation_pipeline.h) and
// prediction (predictor.h) run it exactly as they run trained weights: same images, same
// letterbox, same NMS and metrics. The file's output is already decoded, so forward_train
// returns it as the one "level" (a segmentation file's prototypes beside it, as the head's
// "prototypes" output) and decode() only converts it to corner boxes and scores, the mask
// coefficients after the class probabilities becoming the head's "mask_coefficients".
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

// Runs an ONNX file on (B, 3, H, W) float32 CPU images; returns its outputs in the file's
// order: (B, 4 + nc [+ masks], anchors) first, then a segmentation file's prototypes.
class OnnxRunner {
 public:
  virtual ~OnnxRunner() = default;
  virtual std::vector<torch::Tensor> run(const torch::Tensor& images) = 0;
};

struct ExportedModelShape {
  HeadDescription head;  // a segmentation file's: task "segment", its outputs as the yolo11 plugin's
  std::string architecture;        // what the messages call it ("yolo11n (ONNX int8 QDQ)")
  std::int64_t batch = 0;          // 0: any
  std::int64_t height = 0, width = 0;  // 0: any (a --dynamic file)
};

class ExportedModel final : public Model {
 public:
  ExportedModel(std::unique_ptr<OnnxRunner> runner, ExportedModelShape shape);

  // The head of an exported file of `task` ("detect", "segment") with `nc` classes and `masks`
  // prototypes: what validation and predict read a segmentation model's outputs by.
  static HeadDescription head_of(const std::string& task, int nc, std::int64_t masks);

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
