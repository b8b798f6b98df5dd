#pragma once
// Ultralytics model yamls (`model=yolo11n.yaml`, `model=custom/my-yolo11.yaml`) read as
// Ultralytics reads them: nc, scales, backbone and head, the scale letter from the file's name
// (yolo11s.yaml is scale s) or else the first scale. A file that describes one of the
// architectures the yolo11 model plugin builds (YOLO11's layers, one of its five scales, a
// Detect or Segment head) names that architecture; any other file is refused naming what the
// plugin does not build and its line, never replaced by a stock model.
#include <string>

namespace yoloflow::core {

struct ModelYaml {
  std::string architecture;  // "yolo11s", "yolo11n-seg": a word the model plugins read
  long nc = 0;               // the file's nc (0 when it has none): the data's class count wins in training
};

// Reads `path` (given as `word`, e.g. "model=custom/yolo11n.yaml", for messages). Throws
// InvalidInput in one line: not YAML, a missing key, or a layer, scale or head the yolo11
// plugin does not build, with the file's line.
ModelYaml read_model_yaml(const std::string& path, const std::string& word);

}  // namespace yoloflow::core
