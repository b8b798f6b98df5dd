// The time budget's plan (Ultralytics' time=H): epochs = ceil(budget / mean epoch time), never
// fewer than those done.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <thread>

#include "training/trainer/time_budget.h"

using namespace yoloflow::core;

TEST_CASE("time budget: the epochs that fit are ceil(budget / mean epoch time)") {
  CHECK(epochs_within_budget(3600.0, 600.0, 1) == 6);   // 10-minute epochs in an hour
  CHECK(epochs_within_budget(3600.0, 700.0, 1) == 6);   // 5.14 rounds up: the schedule ends at or past the budget
  CHECK(epochs_within_budget(3600.0, 1800.0, 3) == 6);  // the mean of the epochs done
  CHECK(epochs_within_budget(3600.0, 3600.0, 6) == 6);  // exactly spent
  CHECK(epochs_within_budget(10.0, 2.5, 1) == 4);
}

TEST_CASE("time budget: an overrun keeps the epochs done; nothing timed is no limit") {
  CHECK(epochs_within_budget(3600.0, 4000.0, 3) == 3);  // over budget: the run ends with the epoch in hand
  CHECK(epochs_within_budget(60.0, 600.0, 1) == 1);
  CHECK(epochs_within_budget(3600.0, 0.0, 0) == 100000);
  CHECK(epochs_within_budget(3600.0, 0.0, 2) == 100000);
  CHECK(epochs_within_budget(3.6e9, 1e-9, 1) == 100000);  // a huge ratio stays an int
}

TEST_CASE("time budget: off at 0, spent once its time has passed") {
  TimeBudget off;
  CHECK_FALSE(off.on());
  CHECK_FALSE(off.spent());

  TimeBudget hour(1.0);
  hour.start();
  CHECK(hour.on());
  CHECK(hour.seconds() == doctest::Approx(3600.0));
  CHECK_FALSE(hour.spent());
  // Planned after the first epoch of a process that began at epoch 2: far more than 100 fit.
  CHECK(hour.plan(2, 2, 100, 0.0) > 100);

  TimeBudget tiny(1e-6);  // 3.6 ms
  tiny.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(tiny.spent());
  // 20 ms for one epoch against 3.6 ms: the run ends with the epoch done (epochs 3 of 0..2).
  CHECK(tiny.plan(2, 0, 100, 0.0) == 3);
  CHECK(tiny.stop_reason().rfind("time: the ", 0) == 0);
}
