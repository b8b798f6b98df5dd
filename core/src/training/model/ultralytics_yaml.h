#pragma once
// The architecture of an Ultralytics checkpoint's model, from the `yaml` dict it was built from
// (Ultralytics pickles it with the model): checked layer by layer against YOLO11's (the
// released yolo11.yaml, as the yolo11 plugin builds it) and read for its scale and task.
#include <string>
#include <vector>

#include "training/model/restricted_unpickler.h"

namespace yoloflow::core {

struct Yolo11Yaml {
  std::string scale;            // "n", "s", "m", "l", "x"
  std::string task = "detect";  // "segment" when the last layer is a Segment head
  // The scale's [depth, width, max_channels] where the yaml's `scales` row differs from
  // YOLO11's; empty for the released scales.
  std::vector<double> multiples;
};

// Checks that `yaml` lists YOLO11's layers (from, repeats, module; the last a Detect or Segment
// head) at a known scale with a buildable scales row, and returns what it says. Throws
// InvalidInput starting with `file_name` on the first layer or value that differs.
Yolo11Yaml check_yolo11_yaml(const PickleValue& yaml, const std::string& file_name);

}  // namespace yoloflow::core
