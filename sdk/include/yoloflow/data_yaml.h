#pragma once
// Reads an Ultralytics data.yaml: dataset root, split entries and class names. The host reads
// it to check a pipeline before anything runs (classes, splits); sources read it to open the
// dataset, so both resolve paths by the same rules.
#include <map>
#include <string>
#include <vector>

#include "yoloflow/export.h"

namespace yoloflow {

struct DataYaml {
  std::string file;                 // the data.yaml itself (absolute)
  std::string root;                 // `path`, resolved against the yaml's folder
  std::vector<std::string> names;   // index = class id
  // split name ("train", "val", "test") -> entries (folders, .txt lists or image files),
  // resolved against `root`; an entry starting with "../" that does not exist is tried without
  // it, as Ultralytics does for Roboflow's exports. Entries are not checked to exist.
  std::map<std::string, std::vector<std::string>> splits;
};

// Throws yoloflow::InvalidInput naming the file (and the key) on anything unusable:
// missing file, YAML syntax, names that are neither a list nor a {id: name} map, ids with
// gaps, `nc` disagreeing with `names`.
YOLOFLOW_SDK_API DataYaml read_data_yaml(const std::string& path);

}  // namespace yoloflow
