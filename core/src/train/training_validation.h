#pragma once
// The train sink's validation after an epoch: the dataset's validation split in validation
// batches (validation_loader.h, rectangular by default), the EMA weights swapped in for it,
// NMS and the metrics of detection_metrics.h, and the validation losses.
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "detect/nms.h"
#include "plugin/registry.h"
#include "train/progress_report.h"
#include "yoloflow/loss.h"
#include "train/detection_metrics.h"
#include "train/model_ema.h"
#include "train/validation_loader.h"
#include "yoloflow/model.h"
#include "yoloflow/precision.h"
#include "yoloflow/source.h"

namespace yoloflow::core {

struct TrainingValidationResult {
  MetricsResult metrics;
  NamedLosses losses;  // the loss's mean components over the validation images (none without a loss)
};

class TrainingValidation {
 public:
  // Opens `source` (a configured data source of the validation split); `where` names it in
  // messages ("train.validation").
  TrainingValidation(const Registry& registry, std::unique_ptr<DataSource> source, ValidationOptions options,
                     NmsOptions nms, std::string where);
  ~TrainingValidation();

  const std::vector<std::string>& names() const { return names_; }
  std::size_t size() const { return source_->size(); }

  // Validates `model` (its EMA weights when `ema` is given; put back afterwards) in eval mode
  // under `precision`'s autocast; returns to train mode.
  TrainingValidationResult run(Model& model, ModelEma* ema, PrecisionStrategy* precision, Loss* loss,
                               const torch::Device& device);

 private:
  const Registry& registry_;
  std::unique_ptr<DataSource> source_;
  ValidationOptions options_;
  NmsOptions nms_;
  std::string where_;
  std::vector<std::string> names_;
  std::unique_ptr<ValidationLoader> loader_;  // made at the first run: the stride is the model's
};

}  // namespace yoloflow::core
