#pragma once
// The YOLO11 network: 23 layers plus the head (Detect, or Segment for YOLO11-seg), registered
// as "model.<i>" like the released state dicts, run as two stages (backbone 0-10, neck 11-22)
// that can each be activation-checkpointed.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "blocks.h"
#include "segment_head.h"
#include "yoloflow/model.h"

namespace yoloflow::yolo11 {

struct ScaleSpec {
  char name;
  double depth, width;
  std::int64_t max_channels;
};
// n, s, m, l, x; throws for another letter.
const ScaleSpec& scale_spec(char scale);

// One layer as built: where its inputs come from (-1 = previous layer), repeats after depth
// scaling, the module name and its constructor arguments as Ultralytics prints them.
struct LayerSpec {
  std::vector<int> from;
  int repeats = 1;
  std::string module;
  std::string args;
};

// The head a network ends in: Ultralytics' model families share the 23 layers before it.
enum class Task { Detect, Segment };

class Yolo11Net;

// A contiguous range of layers run as one unit; the checkpoint function reruns it in backward.
struct Stage {
  Yolo11Net* net = nullptr;
  int begin = 0, end = 0;            // layers [begin, end)
  std::vector<int> inputs, outputs;  // layer indices (-1: the image)
  std::vector<torch::Tensor> run(const std::vector<torch::Tensor>& in) const;
  // Batch-norm running statistics of the stage's layers (restored after recompute).
  std::vector<torch::Tensor> bn_buffers() const;
};

class Yolo11Net : public torch::nn::Module {
 public:
  Yolo11Net(char scale, std::int64_t nc, Task task = Task::Detect);
  // The layers of scale `spec.name` with the given multiples (a model yaml's edited scales):
  // the letter still decides C3k2's blocks, as in Ultralytics.
  Yolo11Net(const ScaleSpec& spec, std::int64_t nc, Task task = Task::Detect);

  // levels: per level (B, 4*reg_max + nc, H, W); extras (Segment): "mask_coefficients"
  // (B, 32, anchors) and "prototypes" (B, 32, H/4, W/4).
  ModelOutput forward(const torch::Tensor& images);

  char scale() const { return spec_.name; }
  const ScaleSpec& multiples() const { return spec_; }
  std::int64_t nc() const { return nc_; }
  Task task() const { return segment_ ? Task::Segment : Task::Detect; }
  const std::vector<LayerSpec>& specs() const { return specs_; }
  torch::nn::Module& layer_module(int index) const;
  std::shared_ptr<Detect> detect() const { return detect_; }
  std::shared_ptr<Segment> segment() const { return segment_; }  // null for Task::Detect
  std::int64_t layer_params(int index) const;
  // Writes the eval-mode network and its decode into `g` and marks the output.
  void emit(GraphBuilder& g) const;

  void set_checkpointing(bool backbone, bool neck) {
    ckpt_backbone_ = backbone;
    ckpt_neck_ = neck;
  }

  // Runs layers [begin, end) given the outputs of earlier layers (key -1: the image),
  // returning those listed in `wanted`.
  std::vector<torch::Tensor> run_layers(int begin, int end, const std::vector<int>& in_ids,
                                        const std::vector<torch::Tensor>& in,
                                        const std::vector<int>& wanted) const;

 private:
  ScaleSpec spec_;
  std::int64_t nc_;
  std::vector<LayerSpec> specs_;
  std::vector<std::shared_ptr<Block>> layers_;  // 0..22
  std::shared_ptr<Detect> detect_;              // 23
  std::shared_ptr<Segment> segment_;            // 23 as well, for Task::Segment
  std::shared_ptr<torch::nn::Module> container_;  // "model"
  Stage backbone_, neck_;
  // The same layers cut where one tensor (or two, in the neck) crosses, for checkpointing:
  // backward then recomputes one segment at a time, so the peak is one segment's activations
  // rather than a whole backbone's or neck's.
  std::vector<Stage> backbone_segments_, neck_segments_;
  bool ckpt_backbone_ = false, ckpt_neck_ = false;
};

// Runs `stage` keeping only its inputs; backward reruns it (same results, less memory).
std::vector<torch::Tensor> checkpoint_stage(const Stage& stage, const std::vector<torch::Tensor>& in);

// Runs `segments` in order, each checkpointed, from the tensors in `values` (layer index ->
// tensor; -1: the image); returns the layers listed in `wanted`.
std::vector<torch::Tensor> checkpoint_segments(const std::vector<Stage>& segments, std::map<int, torch::Tensor> values,
                                               const std::vector<int>& wanted);

}  // namespace yoloflow::yolo11
