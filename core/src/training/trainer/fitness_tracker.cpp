#include "training/trainer/fitness_tracker.h"

namespace yoloflow::core {

bool is_new_best(TrainState& state, double fitness) {
  if (fitness < 0 || fitness < state.best_fitness) return false;
  state.best_fitness = fitness;
  return true;
}

}  // namespace yoloflow::core
