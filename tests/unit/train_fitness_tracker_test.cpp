// best.pt as Ultralytics decides it, epoch by epoch (patience: the early_stopping callback's tests).
#include <doctest/doctest.h>

#include "training/trainer/fitness_tracker.h"

using namespace yoloflow::core;

TEST_CASE("fitness: a better or equal validated epoch becomes best.pt; a worse or unvalidated one does not") {
  TrainState s;
  CHECK(is_new_best(s, 0.0));  // the first validation is always a best, even at 0
  CHECK(is_new_best(s, 0.30));
  CHECK(s.best_fitness == 0.30);
  CHECK(is_new_best(s, 0.30));  // a tie moves best.pt to the later epoch
  CHECK_FALSE(is_new_best(s, 0.25));
  CHECK(s.best_fitness == 0.30);
  CHECK_FALSE(is_new_best(s, -1.0));  // not validated this epoch
  CHECK(s.best_fitness == 0.30);
}
