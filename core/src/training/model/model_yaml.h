#pragma once
// Ultralytics model yamls (`model=yolo11n.yaml`, `model=custom/my-yolo11.yaml`) read as
// Ultralytics reads them: nc, scales, backbone and head, the scale letter from the file's name
// (yolo11s.yaml is scale s) or else the first scale, its [depth, width, max_channels] row (or
// depth_multiple and width_multiple without scales). A file with YOLO11's layers and a Detect or
// Segment head names the architecture the yolo11 model plugin builds from it, its multiples
// included (yolo11s[0.75,0.375,768]); any other file is refused naming what the plugin does not
// build and its line, never replaced by a stock model.
#include <string>

namespace yoloflow::core {

struct ModelYaml {
  std::string architecture;  // "yolo11s", "yolo11n-seg", "yolo11s[0.75,0.375,768]": a word the model plugins read
  long nc = 0;               // the file's nc (0 when it has none): the data's class count wins in training
};

// Reads `path` (given as `word`, e.g. "model=custom/yolo11n.yaml", for messages). Throws
// InvalidInput in one line: not YAML, a missing key, or a layer, scale or head the yolo11
// plugin does not build, with the file's line.
ModelYaml read_model_yaml(const std::string& path, const std::string& word);

}  // namespace yoloflow::core
