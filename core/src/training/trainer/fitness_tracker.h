#pragma once
// Which validated epoch becomes best.pt, by Ultralytics' rule: one whose fitness equals or beats
// the best so far (a tie moves best.pt to the later epoch). Stopping on a fitness that no longer
// improves is the early_stopping callback's.
#include "training/step/train_state.h"

namespace yoloflow::core {

// `fitness` below 0: the epoch was not validated, nothing changes. Otherwise updates
// state.best_fitness and says whether this epoch's weights become best.pt.
bool is_new_best(TrainState& state, double fitness);

}  // namespace yoloflow::core
