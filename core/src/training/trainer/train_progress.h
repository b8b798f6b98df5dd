#pragma once
// Where a training run stands, as the callbacks see it (TrainProgress, yoloflow/callback.h) and
// as the progress line shows it (ProgressSnapshot, progress_report.h).
#include <cstdint>
#include <vector>

#include "training/trainer/progress_report.h"
#include "training/step/train_state.h"
#include "yoloflow/callback.h"
#include "yoloflow/optimizer.h"

namespace yoloflow::core {

TrainProgress train_progress(const TrainState& state, int epochs, std::int64_t steps_in_epoch);

// What the host knows without reading the device: epoch, step, images and time.
ProgressSnapshot host_snapshot(const TrainState& state, int epochs, std::int64_t steps_in_epoch, double epoch_seconds);

// host_snapshot and the epoch's mean losses so far (read from the device: a synchronisation) and
// each group's lr.
ProgressSnapshot progress_snapshot(const TrainState& state, int epochs, std::int64_t steps_in_epoch,
                                   double epoch_seconds, const std::vector<ParamGroup>& groups);

}  // namespace yoloflow::core
