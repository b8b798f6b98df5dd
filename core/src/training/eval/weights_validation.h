#pragma once
// `yoloflow val`: trained weights validated on a dataset split, as Ultralytics' `yolo val`
// does it (rectangular batches by default, NMS conf 0.001 iou 0.7 multi-label, the metrics
// of the evaluator the run recorded, `detection` by default). The images are read and fitted to the batches as the run that trained
// the weights validated (its pipeline's `val_source`, given --data and --split, and
// `val_transform`), or as core/resources/train-defaults.json says for weights without a
// pipeline. The command prints and saves; this computes.
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "yoloflow/evaluator.h"
#include "training/eval/val_plots.h"
#include "training/eval/validation_batch.h"

namespace yoloflow {
class Model;
}

namespace yoloflow::core {

class Registry;
struct CheckpointModel;
struct ValidationStages;

struct WeightsValidationRequest {
  std::string weights;    // checkpoint of `yoloflow train`, or a plain state dict with `model`
  std::string model;      // architecture of a plain state dict ("yolo11n")
  std::string data;       // data.yaml; empty: the one the weights were trained on (default_data)
  std::string split = "val";
  std::string device;     // "cpu", "cuda", "cuda:N"; empty: CUDA when available
  int imgsz = 640;        // rounded up to a multiple of the model's stride; 0: default_imgsz of the weights
  std::int64_t batch = 32;
  double conf = 0.001, iou = 0.7;
  int max_det = 300;
  bool rect = true;
  std::vector<std::int64_t> classes;  // class ids whose labels are read (Ultralytics' classes); empty: all
  bool single_cls = false;            // labels and detections as one class (Ultralytics' single_cls)
  bool keep_predictions = false;  // fill WeightsValidationReport::predictions
  bool plots = false;             // fill WeightsValidationReport::plots
  const std::atomic<bool>* stop_flag = nullptr;  // polled between batches (Ctrl-C)
};

// One image's detections in its original file's pixels: [x1, y1, x2, y2, confidence, class].
struct OriginalImageDetections {
  std::string path;
  int width = 0, height = 0;
  std::vector<std::array<float, 6>> boxes;
  std::vector<std::string> mask_rles;  // a segmentation model's: per box, COCO RLE counts at width x height
};

struct WeightsValidationReport {
  Evaluation evaluation;            // the evaluator's (evaluator.h)
  std::vector<MetricColumn> table;  // its table's columns
  std::vector<std::string> names;  // the dataset's class names
  std::string description;         // model, weights, device: one line
  int imgsz = 640;                 // the size used
  std::string data;                // the data.yaml validated on
  std::size_t batches = 0, skipped = 0;
  double seconds = 0;
  ValidationTimes times;  // per phase, for Ultralytics' speed line
  bool interrupted = false;  // the stop flag ended it early: the metrics cover part of the split
  std::vector<OriginalImageDetections> predictions;  // when asked, in the order validated
  std::shared_ptr<ValPlots> plots;  // when asked: what the plots need (ValPlots::write draws them)
};

// Throws InvalidInput in one line naming the option (--weights, --data, --model, ...) when
// an input is missing or does not fit.
WeightsValidationReport validate_weights(const Registry& registry, const WeightsValidationRequest& request);

// The same validation of a model the caller made (an exported ONNX file run by a runtime,
// export/exported_validation.h): `described` says which pipeline's stages read the data (none:
// train-defaults.json's), `description` is the report's one line; request.weights and model
// name it, request.imgsz is used as it is. `square_height` and `square_width`, when positive,
// are the letterbox of every image (a fixed-shape file's input; request.rect must be false).
WeightsValidationReport validate_loaded_model(const Registry& registry, const WeightsValidationRequest& request,
                                              Model& model, const CheckpointModel& described,
                                              const std::string& description, int square_height = 0,
                                              int square_width = 0);

// The stages that read `data`'s `split`, fit its images to the batches and stack them: the
// reader, the transform and the batcher the run that trained the weights validated with, where
// its pipeline (`described`) records them; else train-defaults.json's. The reader is given
// `data` and `split` through the parameters its schema declares with those roles
// (ParamRole::Dataset, ParamRole::Split). Throws naming what is missing.
ValidationStages validation_stages(const Registry& registry, const CheckpointModel& described, const std::string& data,
                                   const std::string& split);

}  // namespace yoloflow::core
