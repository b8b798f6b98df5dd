#pragma once
// Reads an Ultralytics data.yaml: dataset root, split entries and class names.
#include <map>
#include <string>
#include <vector>

namespace yoloflow::plugins::yolo {

struct DataYaml {
  std::string file;                 // the data.yaml itself (absolute)
  std::string root;                 // `path`, resolved against the yaml's folder
  std::vector<std::string> names;   // index = class id
  // split name -> entries (folders, .txt lists or image files), resolved against `root`.
  std::map<std::string, std::vector<std::string>> splits;
};

// Throws yoloflow::InvalidInput naming the file (and the key) on anything unusable:
// missing file, YAML syntax, names that are neither a list nor a {id: name} map, ids with
// gaps, `nc` disagreeing with `names`.
DataYaml read_data_yaml(const std::string& path);

}  // namespace yoloflow::plugins::yolo
