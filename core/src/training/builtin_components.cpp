#include "training/builtin_components.h"

#include "runtime/plugin/plugin_manager.h"
#include "training/predict/predict_sink.h"
#include "training/callbacks/ema_callback.h"
#include "training/trainer/train_batch_images.h"
#include "training/trainer/trainer.h"
#include "training/eval/val_sink.h"

namespace yoloflow::core {

// The host's own components. Kept few: everything that can be a plugin is one. The trainer is
// built in because it owns the training loop and drives the model, optimizer and precision
// plugins; the train_batch_images callback because it draws with the host's sample grid.
void register_builtin_components(Registry& registry) {
  register_trainer(registry);
  register_val_sink(registry);
  register_predict_sink(registry);
  register_train_batch_images(registry);
  register_ema_callback(registry);
}

void use_builtin_components() { set_builtin_registration(&register_builtin_components); }

}  // namespace yoloflow::core
