#pragma once
// `yoloflow export --format onnx --int8 --data D.yaml`: the float32 ONNX graph of export_onnx,
// its activation ranges calibrated on the dataset's images as validation letterboxes them to
// the file's input size, then quantized to QDQ form (qdq_quantizer.h). The convolutions kept
// in float are the DFL's (a fixed expectation over 16 softmax bins: quantizing its input moves
// every box edge by up to a bin's share and saves nothing) and any the caller names.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "training/export/activation_calibration.h"
#include "training/export/onnx_export.h"

namespace yoloflow::core {

class Registry;
struct CheckpointModel;

struct Int8Calibration {
  std::string data;          // data.yaml
  std::string split = "val";  // the split whose images calibrate (Ultralytics' default)
  double fraction = 1.0;     // the first round(fraction x N) images of the split
  std::size_t images = 0;    // at most this many (0: as fraction says)
  // minmax: the head's class and box activations carry their information in their extremes,
  // which percentile and entropy clip (docs/export.md, "INT8": measured on coco128).
  CalibrationMethod method = CalibrationMethod::MinMax;
  double percentile = 99.99;
  std::int64_t batch = 8;
  // More convolutions to keep in float: those whose weight's name starts with one of these
  // ("model.23." keeps the whole head, "model.23.cv2.0.2.weight" one convolution).
  std::vector<std::string> keep_float;
};

struct Int8ExportReport {
  OnnxExportReport file;
  std::size_t calibration_images = 0;
  int quantized = 0;
  std::vector<std::string> kept_float;
};

// `model` as export_onnx takes it; `described` says how its training read the data (a
// CheckpointModel without a pipeline: train-defaults.json). `options.half` must be false.
// Throws InvalidInput naming the option (--data, --fraction) when the data cannot calibrate.
Int8ExportReport export_onnx_int8(const Registry& registry, Model& model, const CheckpointModel& described,
                                  OnnxExportOptions options, const Int8Calibration& calibration,
                                  const std::string& path);

}  // namespace yoloflow::core
