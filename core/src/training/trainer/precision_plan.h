#pragma once
// Precision as a per-epoch schedule: the train sink's `precision` until the first epoch its
// `precision_schedule` lists, then the strategy listed there ({"80": "fp32"}: AMP for epochs
// 0-79, fp32 after). Epoch keys count as the other schedules' do (docs/pipeline-format.md,
// "Schedules"): 0-based, a negative key from the end ("-20": the last 20 epochs). The trainer
// switches at an epoch's start (precision_plan.cpp says what a switch keeps).
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/plugin/registry.h"

namespace yoloflow::core {

class PrecisionPlan {
 public:
  PrecisionPlan() = default;
  // `base`: the resolved `precision` spec; `schedule`: `precision_schedule` as written (checked
  // by check_precision_schedule).
  PrecisionPlan(nlohmann::json base, const nlohmann::json& schedule);

  // The strategy for `epoch` of `epochs`, as {"plugin", "params"?}; the key it comes from
  // ("" for `precision`) in `key` when given.
  nlohmann::json spec_at(int epoch, int epochs, std::string* key = nullptr) const;

 private:
  nlohmann::json base_;
  std::vector<std::pair<int, nlohmann::json>> steps_;  // in the order written
  std::vector<std::string> keys_;
};

// A schedule entry as a component spec: "fp32" is {"plugin": "fp32"}.
nlohmann::json precision_spec(const nlohmann::json& entry);

// `precision_schedule` at `path`: an object whose keys are whole epochs and whose values name a
// precision plugin with parameters its schema takes; each problem at its JSON path.
void check_precision_schedule(const nlohmann::json& schedule, const std::string& path, const Registry& registry,
                              Diagnostics& out);

}  // namespace yoloflow::core
