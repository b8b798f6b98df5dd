#pragma once
// Detection with a trained checkpoint, one image at a time, as `yoloflow predict` runs it:
// the network is rebuilt from what the checkpoint says about itself, images are prepared by
// the augmentations of core/resources/predict-defaults.json (a letterbox to the smallest
// stride-aligned rectangle), and detections come back in the original image's pixels.
// LibTorch stays behind the pimpl: users of this header compile without it.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>

namespace yoloflow {
struct Batch;  // yoloflow/sample.h
}

namespace yoloflow::core {

class Registry;
struct LoadedCheckpointModel;

struct PredictOptions {
  int imgsz = 640;        // longest side of the network input (rounded up to the model's stride); 0:
                          // default_imgsz of the weights (checkpoint_model.h)
  double conf = 0.25;     // minimum class score kept
  double iou = 0.7;       // NMS IoU threshold
  int max_det = 300;      // detections kept per image
  std::string device;     // "cpu", "cuda", "cuda:N"; empty: CUDA when available
  std::vector<int> classes;  // keep only these class ids (empty: all)
  std::vector<std::string> class_names;  // and these classes, by the names the weights give them
  std::string model;      // architecture of a plain state dict ("yolo11n"); checkpoints name their own
  bool retina_masks = false;  // a segmentation model's masks at the original image's resolution
  // Names the options in messages: "--" for the CLI's --weights, "stages.NODE.params." in a sink.
  std::string option_prefix = "--";
};

// One detection in the original image's pixels (clipped to it).
struct Detection {
  int cls = 0;
  float confidence = 0;
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;
  // A segmentation model's: the outer contours of its mask (instance_masks.h); empty otherwise.
  std::vector<std::vector<cv::Point2f>> outlines;
};

struct ImagePrediction {
  int width = 0, height = 0;  // of the original image
  std::vector<Detection> detections;  // by decreasing confidence
  double preprocess_ms = 0, inference_ms = 0, postprocess_ms = 0;
};

class Predictor {
 public:
  // Loads `weights` (a training checkpoint, its EMA weights when it has them; or a plain state
  // dict of the architecture `options.model`). Throws
  // yoloflow::Error / InvalidInput naming the file when it is missing or unusable.
  Predictor(const Registry& registry, const std::string& weights, const PredictOptions& options);
  // A model the caller made (an exported ONNX file run by a runtime, export/exported_runtime.h):
  // `loaded.model` in eval mode on `options.device`, `loaded.described.names` one per class,
  // `loaded.weights_kind` what description() calls it.
  Predictor(const Registry& registry, std::unique_ptr<LoadedCheckpointModel> loaded, const PredictOptions& options);
  ~Predictor();
  Predictor(const Predictor&) = delete;
  Predictor& operator=(const Predictor&) = delete;

  // `image`: 8-bit BGR as cv::imread returns it.
  ImagePrediction predict(const cv::Mat& image);
  // A batch the pipeline already letterboxed (the `predict` sink): one forward pass for all
  // its images, detections mapped back through each sample's geometry to its original file.
  std::vector<ImagePrediction> predict_batch(const Batch& batch);
  const std::vector<std::string>& names() const;
  // Model, classes, weights and device in one line, for the command's first message.
  std::string description() const;
  int imgsz() const;  // the input size actually used (a multiple of the stride)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace yoloflow::core
