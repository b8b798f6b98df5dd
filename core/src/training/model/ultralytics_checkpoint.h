#pragma once
// Ultralytics' own checkpoints (`yolo11n.pt` of their releases, the best.pt / last.pt of any
// Ultralytics run), read from what their pickle says without running it (torch_file.h).
// Ultralytics pickles the whole model: a dict whose `model` and `ema` entries are
// ultralytics.nn.tasks.DetectionModel (SegmentationModel for YOLO11-seg) objects. Each nn.Module's pickled state (its __dict__)
// holds `_parameters`, `_buffers` and `_modules`; walking them gives the state dict under the
// names `model.state_dict()` gives in Python ("model.0.conv.weight"), which are our model's.
// Beside the weights: the architecture (the `yaml` dict the model was built from: its
// `scale`, `nc` and layer list), the class names, the strides, and what the file says of
// itself (`version`, `date`, `epoch`, `train_args`, `train_metrics`).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "training/model/pickle_json.h"
#include "training/model/torch_file.h"
#include "training/model/weights_io.h"

namespace yoloflow::core {

struct UltralyticsCheckpoint {
  std::string weights_entry;  // "ema" when present and not None, else "model"
  NamedTensors weights;       // in state_dict order, dtypes as stored (fp16 in released files)
  std::string model_class;    // "ultralytics.nn.tasks.DetectionModel"
  std::string scale;          // "n", "s", "m", "l", "x"
  // Its scale's [depth, width, max_channels] where the yaml's row differs from YOLO11's (a model
  // built from a yaml with edited scales); empty for the released scales.
  std::vector<double> multiples;
  std::string task = "detect";  // "segment" for a SegmentationModel (a Segment head)
  int nc = 0;
  std::vector<std::string> names;  // nc names, by class index
  std::vector<double> strides;     // [8, 16, 32]
  std::string version;        // Ultralytics' version that wrote it, e.g. "8.4.56"; "" when absent
  std::string date;           // ISO date it was written; "" when absent
  std::optional<std::int64_t> epoch;  // the last finished epoch (0-based); -1 for a final best.pt
  // The run's arguments (imgsz, data, epochs...) and its last validation's metrics, in the
  // file's order.
  nlohmann::ordered_json train_args = nlohmann::ordered_json::object();
  nlohmann::ordered_json train_metrics = nlohmann::ordered_json::object();

  // The model that builds it: the train sink's default model (core/resources/train-defaults.json,
  // the yolo11 plugin: YOLO11 as released) at this scale, nc and task, {"plugin": ..., "params": ...}.
  nlohmann::json model_spec() const;
  // Its architecture name as users write it: the plugin, the scale letter and the task's
  // suffix, "yolo11n", "yolo11n-seg", then other multiples as a scales row: "yolo11s[0.75,0.375,768]".
  std::string architecture() const;
};

// Whether the file's root is an Ultralytics checkpoint: a dict whose `model` or `ema` entry is
// an object of an ultralytics.* class.
bool is_ultralytics_checkpoint(const PickleValue& root);

// Reads an Ultralytics checkpoint (is_ultralytics_checkpoint(file.root())). `entry` picks the
// model ("ema" or "model"; "" = ema when not None, else model). Throws InvalidInput in one line
// naming the file when it holds anything but a YOLO11 detection or segmentation model as the yolo11 plugin
// builds it (the released architecture), or its module tree is malformed.
UltralyticsCheckpoint read_ultralytics_checkpoint(TorchFile& file, const std::string& entry = "");

}  // namespace yoloflow::core
