#pragma once
// What a validated epoch decides, by Ultralytics' rules: best.pt is (re)written when the
// fitness equals or beats the best so far (a tie moves it to the later epoch); patience counts
// the epochs since a strict improvement, every epoch counting as one while the best fitness is
// still exactly 0; the run stops once that count reaches `patience` (0 = never), except after
// its last epoch.
#include <cstdint>

#include "train/train_state.h"

namespace yoloflow::core {

struct FitnessVerdict {
  bool write_best = false;  // this epoch's weights become best.pt
  bool stop = false;        // early stop: patience exhausted
};

// `fitness` below 0: the epoch was not validated, nothing changes. `epochs`: epochs since the
// previous validation (val_every). Updates state.best_fitness and state.epochs_without_improvement.
FitnessVerdict judge_fitness(TrainState& state, double fitness, int epochs, std::int64_t patience, bool last_epoch);

}  // namespace yoloflow::core
