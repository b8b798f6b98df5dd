#include "train/fitness_tracker.h"

#include <algorithm>

namespace yoloflow::core {

FitnessVerdict judge_fitness(TrainState& state, double fitness, int epochs, std::int64_t patience, bool last_epoch) {
  FitnessVerdict v;
  if (fitness < 0) return v;
  const bool improved = fitness > state.best_fitness || state.best_fitness == 0.0;
  v.write_best = fitness >= state.best_fitness;
  if (v.write_best) state.best_fitness = fitness;
  state.epochs_without_improvement = improved ? 0 : state.epochs_without_improvement + std::max(epochs, 1);
  v.stop = patience > 0 && state.epochs_without_improvement >= patience && !last_epoch;
  return v;
}

}  // namespace yoloflow::core
