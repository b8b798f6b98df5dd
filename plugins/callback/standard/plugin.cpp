// Registers early_stopping and periodic_checkpoints.
#include "callbacks.h"
#include "yoloflow/plugin.h"

namespace yoloflow::callbacks {
namespace {

void register_callbacks(Registrar& r) {
  r.add_callback<EarlyStopping>("early_stopping", EarlyStopping::schema(),
                                "Stops training once the validation fitness has not improved for `patience` epochs.");
  r.add_callback<PeriodicCheckpoints>(
      "periodic_checkpoints", PeriodicCheckpoints::schema(),
      "Keeps epochN.pt every save_period epochs and rewrites last.pt mid-epoch every save_every batches.");
}

}  // namespace
}  // namespace yoloflow::callbacks

YOLOFLOW_PLUGIN("callback_standard", "1.0.0", yoloflow::callbacks::register_callbacks)
