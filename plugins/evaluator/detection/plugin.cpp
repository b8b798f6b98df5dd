// Registers `detection`, the train and val sinks' default evaluator: box P, R, mAP50 and
// mAP50-95 as Ultralytics 8.4's DetectionValidator computes them (detection_metrics.h), in
// Ultralytics' results.csv columns, fitness mAP50-95.
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "batch_labels.h"
#include "detection_metrics.h"
#include "yoloflow/error.h"
#include "yoloflow/evaluator.h"
#include "yoloflow/plugin.h"

namespace yoloflow::detection_eval {
namespace {

class DetectionEvaluator final : public Evaluator {
 public:
  void setup(const HeadDescription& head) override {
    if (head.nc < 1) throw Error("detection: the model's head has " + std::to_string(head.nc) + " classes");
    metrics_ = std::make_unique<DetectionMetrics>(head.nc);
  }

  std::vector<std::string> columns() const override {
    return {"metrics/precision(B)", "metrics/recall(B)", "metrics/mAP50(B)", "metrics/mAP50-95(B)"};
  }

  std::vector<MetricColumn> table() const override {
    return {{"precision", "Box(P", "P", false},
            {"recall", "R", "R", false},
            {"mAP50", "mAP50", "mAP50", true},
            {"mAP50-95", "mAP50-95)", "mAP50-95", true}};
  }

  void reset() override { require().reset(); }

  void add_batch(const Batch& batch, const std::vector<ImagePredictions>& predictions) override {
    auto& metrics = require();
    if (predictions.size() != static_cast<std::size_t>(batch.size)) {
      throw Error("detection: " + std::to_string(predictions.size()) + " images' predictions for a batch of " +
                  std::to_string(batch.size));
    }
    const std::vector<ImageLabels> labels = labels_per_image(batch);
    for (std::size_t i = 0; i < labels.size(); ++i) metrics.add_image(predictions[i].boxes, labels[i].labels);
  }

  Evaluation compute() override {
    const MetricsResult r = require().compute();
    Evaluation e;
    e.columns = {{"metrics/precision(B)", r.precision},
                 {"metrics/recall(B)", r.recall},
                 {"metrics/mAP50(B)", r.map50},
                 {"metrics/mAP50-95(B)", r.map50_95}};
    e.fitness = r.fitness;
    e.images = r.images;
    e.instances = r.instances;
    e.all = {r.precision, r.recall, r.map50, r.map50_95};
    for (const auto& c : r.per_class) e.per_class.push_back({c.cls, c.images, c.instances, {c.precision, c.recall, c.ap50, c.ap50_95}});
    return e;
  }

  std::vector<MatchedDetections> matched() const override {
    if (!metrics_) return {};
    return {metrics_->matched("Box")};
  }

 private:
  DetectionMetrics& require() {
    if (!metrics_) throw Error("detection: used before setup()");
    return *metrics_;
  }
  std::unique_ptr<DetectionMetrics> metrics_;
};

void register_evaluators(Registrar& r) {
  r.add_evaluator<DetectionEvaluator>(
      "detection", Schema(),
      "Box precision, recall, mAP50 and mAP50-95 as Ultralytics' detection validator computes them (101-point "
      "interpolated AP over IoU 0.50:0.05:0.95); fitness mAP50-95; results.csv columns metrics/precision(B), "
      "metrics/recall(B), metrics/mAP50(B), metrics/mAP50-95(B).");
}

}  // namespace
}  // namespace yoloflow::detection_eval

YOLOFLOW_PLUGIN("detection_evaluator", "1.0.0", yoloflow::detection_eval::register_evaluators)
