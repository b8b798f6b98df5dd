#pragma once
// How validation results are shown and saved, the same for `yoloflow val`, the `val`
// sink and the train sink's final summary: Ultralytics' table (all, then each class with
// labels: images, instances, P, R, mAP50, mAP50-95) and a metrics.json a script can read.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "training/eval/detection_metrics.h"

namespace yoloflow::core {

// `names[c]` names class c; a class beyond `names` is shown by its number.
std::string metrics_table(const MetricsResult& result, const std::vector<std::string>& names);

// {"precision", "recall", "mAP50", "mAP50-95", "fitness", "images", "instances",
//  "per_class": [{"class", "name", "images", "instances", "precision", "recall", "mAP50", "mAP50-95"}]}
nlohmann::ordered_json metrics_json(const MetricsResult& result, const std::vector<std::string>& names);

}  // namespace yoloflow::core
