#pragma once
// Evaluator plugins (LibTorch): what validation measures for a task. The evaluator owns the
// metrics, the fitness (the one number that picks best.pt, drives `patience` and ranks sweep
// runs) and the results.csv columns they go to; the host runs the model, NMS and the loss, hands
// the evaluator every validated image's predictions with the batch's targets, and writes the
// columns and the table it is given. The built-in `detection` evaluator is Ultralytics' box
// P, R, mAP50 and mAP50-95 (docs/validation.md); an evaluator plugin replaces it for a whole
// run: the train sink's `evaluator`, and the val sink's.
//
// Pipeline JSON, inside the train sink's (or the val sink's) params:
//   "evaluator": {"plugin": "detection"}
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>  // at::Tensor; see optimizer.h

#include "yoloflow/component.h"
#include "yoloflow/head.h"
#include "yoloflow/sample.h"

namespace yoloflow {

// One validated image's predictions after NMS, on the CPU, in its batch's pixels (the batch's
// samples map them back to the original files).
struct ImagePredictions {
  at::Tensor boxes;  // (N, 6) float [x1, y1, x2, y2, score, cls], highest score first
  // The head's other outputs for these detections (HeadDescription::outputs, as decode gives
  // them): per anchor (N, channels), row i belonging to boxes row i; per image this image's (...).
  std::map<std::string, at::Tensor> extras;
};

// One value of the per-class table and the metrics file: "precision" in metrics.json, "Box(P"
// over the table's column, "P" in progress lines.
struct MetricColumn {
  std::string key;     // metrics.json's name
  std::string header;  // the table's column header
  std::string label;   // progress and summary lines
  bool headline = false;  // shown in every epoch's line (mAP50, mAP50-95 for detection)
};

struct ClassEvaluation {
  int cls = 0;
  int images = 0;     // images with at least one instance of the class
  int instances = 0;  // instances of the class
  std::vector<double> values;  // in Evaluator::table() order
};

struct Evaluation {
  // One value per Evaluator::columns() entry: what results.csv gets for the epoch.
  std::map<std::string, double> columns;
  // Higher is better: best.pt, patience and sweep ranking read it (results.csv's `fitness`).
  double fitness = 0;
  int images = 0, instances = 0;
  std::vector<double> all;                 // the table's "all" row, in table() order
  std::vector<ClassEvaluation> per_class;  // classes with instances, by class id
};

// Whether `e` is what an evaluator that declared `columns` and a table of `table_columns`
// values may give: a finite value for every column and for no other, a finite fitness, the
// table's rows (overall, per class) of `table_columns` values. Empty when it is; else what
// breaks it, one line. The host checks every compute() with it, and testing_torch.h's
// evaluator_contract too.
inline std::string check_evaluation(const Evaluation& e, const std::vector<std::string>& columns, std::size_t table_columns) {
  for (const auto& c : columns) {
    auto it = e.columns.find(c);
    if (it == e.columns.end()) return "gave no value for its column '" + c + "'";
    if (!std::isfinite(it->second)) return "gave its column '" + c + "' a value that is not finite";
  }
  for (const auto& [c, v] : e.columns) {
    if (std::find(columns.begin(), columns.end(), c) == columns.end()) {
      return "gave a value for '" + c + "', which columns() does not list";
    }
  }
  if (!std::isfinite(e.fitness)) return "gave a fitness that is not finite";
  if (!e.all.empty() && e.all.size() != table_columns) {
    return "gave " + std::to_string(e.all.size()) + " values for the table's " + std::to_string(table_columns) + " columns";
  }
  for (const auto& c : e.per_class) {
    if (c.values.size() != table_columns) {
      return "gave class " + std::to_string(c.cls) + " " + std::to_string(c.values.size()) + " values for the table's " +
             std::to_string(table_columns) + " columns";
    }
  }
  return "";
}

// The detections behind an evaluation, for the curves drawn beside it (MaskPR_curve.png, ...):
// one family per overlap the metrics match by ("Box", "Mask"), in Ultralytics' plot names.
struct MatchedDetections {
  std::string family;
  std::vector<float> scores;          // every detection's score
  std::vector<int> classes;           // ... its class
  std::vector<std::uint8_t> correct;  // ... 1 where it matched a label of its class at IoU 0.5
  std::vector<int> label_classes;     // every label's class
};

class Evaluator : public Component {
 public:
  ~Evaluator() override = default;
  // Called with the model's head before a model is first evaluated (again when another model
  // is handed over). Refuses (throws yoloflow::Error) a head it cannot evaluate.
  virtual void setup(const HeadDescription& head) = 0;
  // The results.csv columns it fills, in order, e.g. "metrics/precision(B)", ...: known from
  // setup on, before any image, so that every epoch's row has the same columns.
  virtual std::vector<std::string> columns() const = 0;
  // The per-class table's values, in order.
  virtual std::vector<MetricColumn> table() const = 0;
  // Starts an evaluation (an epoch's validation).
  virtual void reset() = 0;
  // One validated batch: its targets (batch.targets, batch.samples) and each image's
  // predictions, in the batch's order.
  virtual void add_batch(const Batch& batch, const std::vector<ImagePredictions>& predictions) = 0;
  // The evaluation of every batch since reset().
  virtual Evaluation compute() = 0;
  // The detections of the batches since reset() as matched for the metrics, per family, for the
  // plots (plots=True): the host draws each family's P, R, F1 and PR curves but the box one,
  // which it matches itself. The default: none.
  virtual std::vector<MatchedDetections> matched() const { return {}; }
};

}  // namespace yoloflow
