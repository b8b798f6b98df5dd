#pragma once
// Runs of a sweep that would train the same thing: their resolved pipelines are equal, or
// differ only in what their components ignore (the lr0 and momentum of an `auto` optimizer,
// which chooses its own). A grid axis that changes nothing would otherwise train N copies.
#include <string>

#include "runtime/plugin/registry.h"
#include "runtime/sweep/sweep_plan.h"

namespace yoloflow::core {

// One line per run that repeats an earlier one ("runs 'A' and 'B' ..."); empty when every run
// differs. Runs whose pipeline does not load are left to the sweep's own validation.
std::string same_runs(const SweepPlan& plan, const Registry& registry);

}  // namespace yoloflow::core
