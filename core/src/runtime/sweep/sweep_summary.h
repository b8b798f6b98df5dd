#pragma once
// summary.csv and summary.md of a sweep: one row per run, best fitness first. Rebuilt from
// the run folders (run_state.h, results.csv) each time, written atomically.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/sweep/sweep_plan.h"

namespace yoloflow::core {

struct SummaryRow {
  std::string run, status, epochs, reason, dir, overrides;
  std::optional<double> time_s, img_s, peak_gpu_mem_gib, fitness;
  // The last validated epoch's metrics: results.csv's metrics/ columns (the run's evaluator's),
  // named without the prefix ("mAP50-95(B)"); its fitness column is `fitness`.
  std::vector<std::pair<std::string, double>> metrics;
};


// One row per planned run, from its folder under `out_dir`, sorted by fitness (highest
// first; runs without a validated epoch last, in plan order).
std::vector<SummaryRow> collect_summary(const SweepPlan& plan, const std::string& out_dir);
std::string summary_csv(const std::vector<SummaryRow>& rows);
std::string summary_markdown(const std::string& sweep_name, const std::vector<SummaryRow>& rows);
// Collects and writes OUT/summary.csv and OUT/summary.md; returns the rows.
std::vector<SummaryRow> write_summary(const SweepPlan& plan, const std::string& out_dir);

}  // namespace yoloflow::core
