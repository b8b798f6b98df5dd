#include "training/trainer/precision_plan.h"

#include <cerrno>
#include <cstdlib>
#include <limits>

#include "runtime/pipeline/component_spec.h"

namespace yoloflow::core {
namespace {

// "80" or "-20" as an epoch key; false for anything else ("1.5", "x", "").
bool epoch_key(const std::string& text, int& out) {
  if (text.empty() || text.size() > 9) return false;
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || end != text.c_str() + text.size()) return false;
  out = static_cast<int>(v);
  return true;
}

}  // namespace

nlohmann::json precision_spec(const nlohmann::json& entry) {
  if (entry.is_string()) return nlohmann::json{{"plugin", entry}};
  return entry;
}

PrecisionPlan::PrecisionPlan(nlohmann::json base, const nlohmann::json& schedule) : base_(std::move(base)) {
  if (!schedule.is_object()) return;
  for (const auto& [key, value] : schedule.items()) {
    int epoch = 0;
    if (!epoch_key(key, epoch)) continue;  // refused by check_precision_schedule before a run
    steps_.emplace_back(epoch, precision_spec(value));
    keys_.push_back(key);
  }
}

nlohmann::json PrecisionPlan::spec_at(int epoch, int epochs, std::string* key) const {
  // The latest listed epoch at or before `epoch`; a negative key lying before the run never
  // wins over a listed epoch 0, as a step schedule's.
  const nlohmann::json* best = &base_;
  int best_at = std::numeric_limits<int>::min();
  if (key) key->clear();
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    const int at = steps_[i].first < 0 ? epochs + steps_[i].first : steps_[i].first;
    if (at <= epoch && at >= best_at) {
      best = &steps_[i].second;
      best_at = at;
      if (key) *key = keys_[i];
    }
  }
  return *best;
}

void check_precision_schedule(const nlohmann::json& schedule, const std::string& path, const Registry& registry,
                              Diagnostics& out) {
  if (schedule.is_null()) return;
  if (!schedule.is_object()) {
    out.push_back({path, "expected an object of epochs and precision strategies, e.g. {\"80\": \"fp32\"}"});
    return;
  }
  const RegistryComponentValidator components(registry);
  for (const auto& [key, value] : schedule.items()) {
    const std::string at = path + "." + key;
    int epoch = 0;
    if (!epoch_key(key, epoch)) {
      out.push_back({at, "'" + key + "' is no epoch: keys are whole epochs, 0-based, or negative from the end "
                         "(\"80\", \"-20\")"});
      continue;
    }
    if (!value.is_string() && !(value.is_object() && value.contains("plugin"))) {
      out.push_back({at, "expected a precision plugin's name or {\"plugin\": NAME, \"params\": {...}}"});
      continue;
    }
    components.validate_component(precision_spec(value), "precision", at, out);
  }
}

}  // namespace yoloflow::core
