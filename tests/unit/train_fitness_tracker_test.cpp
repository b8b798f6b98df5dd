// best.pt and patience as Ultralytics decides them, epoch by epoch.
#include <doctest/doctest.h>

#include "train/fitness_tracker.h"

using namespace yoloflow::core;

TEST_CASE("fitness: a better or equal epoch writes best.pt; patience counts from the last strict improvement") {
  TrainState s;
  CHECK(judge_fitness(s, 0.30, 1, 2, false).write_best);  // the first validation is always a best
  CHECK(s.best_fitness == 0.30);
  const auto tie = judge_fitness(s, 0.30, 1, 2, false);
  CHECK(tie.write_best);             // a tie moves best.pt to the later epoch...
  CHECK(s.epochs_without_improvement == 1);  // ...but is no improvement for patience
  CHECK_FALSE(tie.stop);
  const auto worse = judge_fitness(s, 0.25, 1, 2, false);
  CHECK_FALSE(worse.write_best);
  CHECK(worse.stop);                 // two epochs without a strict improvement, patience 2
  CHECK(s.best_fitness == 0.30);
  CHECK_FALSE(judge_fitness(s, 0.20, 1, 2, /*last_epoch=*/true).stop);  // the last epoch ends anyway
  // Not validated this epoch: nothing changes.
  const int before = s.epochs_without_improvement;
  CHECK_FALSE(judge_fitness(s, -1.0, 1, 2, false).write_best);
  CHECK(s.epochs_without_improvement == before);
}

TEST_CASE("fitness: while the best is 0 every epoch counts as an improvement; val_every counts epochs") {
  TrainState s;
  for (int e = 0; e < 5; ++e) CHECK_FALSE(judge_fitness(s, 0.0, 1, 1, false).stop);
  CHECK(s.epochs_without_improvement == 0);
  judge_fitness(s, 0.1, 1, 0, false);
  // Validated every 3 epochs: a miss counts 3; patience 0 never stops.
  const auto v = judge_fitness(s, 0.05, 3, 0, false);
  CHECK(s.epochs_without_improvement == 3);
  CHECK_FALSE(v.stop);
}
