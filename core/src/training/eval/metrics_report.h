#pragma once
// How validation results are shown and saved, the same for `yoloflow val`, the `val`
// sink and the train sink's final summary: Ultralytics' table (all, then each class with
// instances: images, instances, then the evaluator's values, for detection P, R, mAP50,
// mAP50-95) and a metrics.json a script can read.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "yoloflow/evaluator.h"

namespace yoloflow::core {

// `names[c]` names class c; a class beyond `names` is shown by its number. `table`: the
// evaluator's (Evaluator::table()).
std::string metrics_table(const Evaluation& result, const std::vector<MetricColumn>& table,
                          const std::vector<std::string>& names);

// The evaluator's values by key, then "fitness", "images", "instances", and "per_class": [{"class",
// "name", "images", "instances", the values by key}]; for detection {"precision", "recall",
// "mAP50", "mAP50-95", ...}.
nlohmann::ordered_json metrics_json(const Evaluation& result, const std::vector<MetricColumn>& table,
                                    const std::vector<std::string>& names);

// "P 0.6123  R 0.5012  mAP50 0.5521  mAP50-95 0.3817": the "all" values by label; only the
// headline ones (mAP50, mAP50-95) when `headline`.
std::string metrics_line(const Evaluation& result, const std::vector<MetricColumn>& table, bool headline);

}  // namespace yoloflow::core
