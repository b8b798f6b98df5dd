#include "training/trainer/train_sink_checks.h"

#include "training/callbacks/ema_callback.h"
#include "training/trainer/precision_plan.h"
#include "training/step/train_setup.h"
#include "training/eval/validation_plan.h"
#include "yoloflow/error.h"

namespace yoloflow::core {
namespace {

// A check that throws InvalidInput ("PATH: what is wrong") as configure() runs it, its message
// as one problem.
template <class F>
void collect(Diagnostics& out, F&& check) {
  try {
    check();
  } catch (const InvalidInput& e) {
    out.push_back({"", e.what()});
  }
}

}  // namespace

void check_train_params(const json& params, const std::string& path, const Registry& registry, Diagnostics& out) {
  if (!params.is_object()) return;
  if (!params.contains("val_source") || params["val_source"].is_null()) {
    out.push_back({path + ".val_source", no_validation_source_message()});
  }
  collect(out, [&] { check_validation_transform(registry, params.value("val_transform", json()), path + ".val_transform"); });
  collect(out, [&] { check_validation_batcher(registry, params.value("val_batcher", json()), path + ".val_batcher"); });
  check_precision_schedule(params.value("precision_schedule", json()), path + ".precision_schedule", registry, out);
  collect(out, [&] {
    callbacks_with_ema(params.value("callbacks", json::array()), params.value("ema", true), path + ".callbacks",
                       path + ".ema");
  });
}

}  // namespace yoloflow::core
