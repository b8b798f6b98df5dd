#pragma once
// Validation as a pipeline, run by the graph runner, for every place that validates (the
// train sink after an epoch, `yoloflow val`): a source reading the validation split (any
// source plugin), the validation transform, the validation batcher and the `val` sink,
// which is handed the model. Its batches follow validation_plan.h (rectangular by default):
// each is one planned batch of the runner, its shape given to the transform as `height` and
// `width`. The model's forward passes run on the calling thread.
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "runtime/graph/graph_runner.h"
#include "runtime/pipeline/pipeline.h"
#include "runtime/plugin/registry.h"
#include "training/components/named_losses.h"
#include "training/eval/val_sink.h"
#include "training/eval/validation_plan.h"
#include "yoloflow/loss.h"
#include "yoloflow/model.h"
#include "yoloflow/precision.h"

namespace yoloflow::core {

struct ValidationResult {
  Evaluation evaluation;            // the evaluator's (evaluator.h)
  std::vector<MetricColumn> table;  // its table's columns
  NamedLosses losses;  // the loss's mean components over the validation images (none without a loss)
  ValidationTimes times;  // where the time went, per phase
};

// The validation pipeline's stages, as {"plugin", "params"}.
struct ValidationStages {
  json source;     // reads the validation split
  json transform;  // an augmentation with `height` and `width`
  json batcher;    // a batcher with an integer `batch`
  std::string transform_path, batcher_path;  // name `transform` and `batcher` in messages
  json sink;       // null: {"plugin": "val", "params": nms + evaluator}
  json nms;        // the val sink's conf, iou and max_det
  json evaluator;  // the val sink's evaluator; null: its default
  std::string evaluator_path;  // where `evaluator` was given, for messages
};

class ValidationPipeline {
 public:
  // Checks the transform and the batcher (check_validation_transform/batcher), builds and
  // checks the validation pipeline and creates its stages (the source opens its data here);
  // `options` gives imgsz, the batch and rect; `where` names it in messages
  // ("stages.train.params.validation"). Throws InvalidInput naming what is wrong.
  ValidationPipeline(const Registry& registry, const ValidationStages& stages, ValidationOptions options,
                     const StageContext& context, std::string where);
  ~ValidationPipeline();

  const std::vector<std::string>& names() const { return names_; }
  std::size_t size();
  // The validation pipeline as the runner runs it (its resolved document).
  const Pipeline& pipeline() const { return pipeline_; }

  // Runs every validation batch through the pipeline's sink, planned the first time for a
  // model whose largest stride is `stride`. Images that fail to load are warned about and
  // left out (counted in skipped()).
  EpochStats run_batches(int stride);
  std::size_t batches() const { return plan_.size(); }
  std::size_t skipped() const { return skipped_; }
  // The stop flag of the options was set: the last run ended early.
  bool interrupted() const { return runner_->stop_requested(); }

  // The val sink's evaluator set up for `head` (its columns known before the first run).
  const Evaluator& evaluator(const HeadDescription& head);

  // Validates `model` as it is (a trainer's callbacks have put the weights to score in it)
  // with the val sink, in eval mode under `precision`'s autocast; returns it to train
  // mode. `kept`, when given, receives every image's detections; `plots`, when given, what
  // the plots of this validation need (val_plots.h).
  ValidationResult run(Model& model, PrecisionStrategy* precision, Loss* loss, const torch::Device& device,
                       std::vector<KeptDetections>* kept = nullptr, ValPlots* plots = nullptr);

 private:
  Pipeline pipeline_;  // referenced by runner_
  std::unique_ptr<HostedValidationSink> hosted_;  // the runner's sink, unless the stages name another
  std::unique_ptr<GraphRunner> runner_;
  ValidationOptions options_;
  std::string where_;
  std::vector<std::string> names_;
  std::vector<PlannedBatch> plan_;
  bool planned_ = false;
  std::size_t plan_skipped_ = 0, skipped_ = 0;
};

}  // namespace yoloflow::core
