#pragma once
// The `ema` callback: an exponential moving average of the weights (as Ultralytics' ModelEMA),
// which validation scores, checkpoints save as their `ema` entry, and `yoloflow val`, `predict`
// and `export` read. Built into the training library because it averages the model's tensors,
// which the callback SDK does not hand to plugins: the train sink finds it among its callbacks
// (model_ema_of) and updates the average after every optimizer step, including the one an
// epoch's end makes for a partial accumulation.
#include <string>

#include <torch/nn/module.h>

#include "plugin/registry.h"
#include "train/model_ema.h"
#include "train/train_callbacks.h"

namespace yoloflow::core {

void register_ema_callback(Registry& registry);

// The train sink's `callbacks` list with an `ema` entry appended when `ema` (its `ema`
// parameter) is true and the list has none. Throws InvalidInput, naming `ema_path` and the
// entry's path under `callbacks_path`, when `ema` is false and the list has one.
json callbacks_with_ema(const json& callbacks, bool ema, const std::string& callbacks_path, const std::string& ema_path);

// The average kept by the first `ema` callback among `callbacks`, made for `model` here; null
// when there is none.
ModelEma* model_ema_of(const TrainCallbacks& callbacks, torch::nn::Module& model);

}  // namespace yoloflow::core
