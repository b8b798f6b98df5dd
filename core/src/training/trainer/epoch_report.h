#pragma once
// What a finished epoch leaves behind: its results.csv row (Ultralytics' columns: losses,
// the evaluator's metrics, learning rates; then ours: fitness, speed, batch, schedules, memory,
// step profile), the
// results.png plot (unless plots are off), the epoch's log line, and the run's closing summary.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "training/trainer/progress_report.h"
#include "runtime/run/results_csv.h"
#include "training/step/step_profile.h"
#include "training/step/train_state.h"
#include "training/eval/validation_pipeline.h"
#include "yoloflow/optimizer.h"

namespace yoloflow::core {

using ResultsRow = std::map<std::string, double>;

// The epoch's training facts as results.csv names them.
struct EpochFacts {
  int epoch = 0;                        // 0-based
  double seconds = 0;                   // the epoch's training time
  NamedLosses train_loss;               // the loss's mean components
  int imgsz = 640;
  std::int64_t accumulate = 1;          // after warmup
  std::map<std::string, double> schedule;  // the pipeline's per-epoch values (StageContext::schedule)
};

// results.csv's leading columns in Ultralytics' order: epoch, time, train/<name>_loss for each
// of the loss's `loss_names`, the evaluator's `metric_columns`, val/<name>_loss, lr/pg0..2.
std::vector<std::string> results_columns(const std::vector<std::string>& loss_names,
                                         const std::vector<std::string>& metric_columns);

// The last validation as the closing summary and the epoch lines show it.
struct ShownValidation {
  Evaluation evaluation;
  std::vector<MetricColumn> table;
  std::vector<std::string> names;  // the classes' names, for the per-class table
};

class EpochReport {
 public:
  // `plots`: redraw results.png after each row (false: results.csv only). `columns`: results.csv's
  // leading columns (results_columns).
  EpochReport(std::string run_dir, bool plots, std::vector<std::string> columns);
  // Resume: keeps the rows of the epochs before `epoch`.
  void resume(int epoch) { csv_.load(epoch); }

  // The training part of the row; `profile` (may be null) adds its epoch means and logs them.
  static ResultsRow training_row(const EpochFacts& facts, const TrainState& state, const std::vector<ParamGroup>& groups,
                                 StepProfile* profile);
  static void add_validation(ResultsRow& row, const ValidationResult& v);
  // The epoch's CUDA memory peaks (nothing on the CPU); read after validation, which they include.
  static void add_memory(ResultsRow& row, const torch::Device& device);

  // Appends the row to results.csv and redraws results.png (with plots).
  void write(const ResultsRow& row);

  // "trained N epochs in T; results in DIR (files...)" and the last validation.
  std::string summary(double total_seconds, const ShownValidation* last_validation) const;

 private:
  std::string run_dir_;
  bool plots_ = true;
  ResultsCsv csv_;
};

// "epoch 3/100 done in 1:02: box ... cls ... dfl ...[, mAP50 ... mAP50-95 ...]; then ...", the loss's
// components (`loss_names`) as `row` has them, the evaluator's headline values.
std::string epoch_line(int epoch, int epochs, double seconds, const ResultsRow& row,
                       const std::vector<std::string>& loss_names, const ShownValidation* validation,
                       double validation_seconds, double results_seconds, double checkpoint_seconds);

}  // namespace yoloflow::core
