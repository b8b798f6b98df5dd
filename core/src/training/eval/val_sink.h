#pragma once
// The `val` sink: evaluates a model on the batches a pipeline delivers, with the same
// validation step in every place that validates: a checkpoint given by `weights`
// (validate-only pipelines), or the model the train sink is training, handed to it by the
// host (its validation each epoch runs a pipeline ending in this sink). Its evaluator (a
// component parameter, evaluator.h) measures the predictions: for detection P, R, mAP50,
// mAP50-95 overall and per class; the sink writes them to a file in the run folder and, given a
// loss, the validation losses.
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "runtime/plugin/registry.h"
#include "training/eval/val_plots.h"
#include "training/eval/validation_batch.h"
#include "training/components/named_losses.h"
#include "yoloflow/evaluator.h"
#include "yoloflow/loss.h"
#include "yoloflow/model.h"
#include "yoloflow/precision.h"
#include "yoloflow/sink.h"

namespace yoloflow::core {

// Registers the built-in `val` sink (called by register_builtin_components).
void register_val_sink(Registry& registry);

// One validated image's detections after NMS: (N, 6) [x1, y1, x2, y2, score, cls] in its
// batch's pixels (its geometry maps them back to the original file), on the CPU.
struct KeptDetections {
  SampleInfo sample;
  torch::Tensor boxes;
  // A segmentation model's: each detection's mask at the original image's size, COCO RLE counts
  // (mask_rle.h); empty for a detector.
  std::vector<std::string> mask_rles;
};

// The val sink as the host drives it with a model of its own (`weights` ""): the model
// is used as it is (the caller puts it in eval mode and swaps in EMA weights), under
// `precision`'s autocast, with `loss` for the validation losses (both may be null); `kept`,
// when given, receives every image's detections.
class HostedValidation {
 public:
  virtual void use_model(Model& model, PrecisionStrategy* precision, Loss* loss, const torch::Device& device,
                         std::vector<KeptDetections>* kept = nullptr) = 0;
  // The evaluator, set up for `head` (the model about to be handed over): its columns and
  // table are known before the first validation.
  virtual const Evaluator& evaluator(const HeadDescription& head) = 0;
  // After the epoch: the evaluation, and the loss's mean components (empty without a loss).
  virtual const Evaluation& evaluation() const = 0;
  virtual std::vector<MetricColumn> table() const = 0;  // the evaluator's
  virtual const NamedLosses& losses() const = 0;
  // Where the epoch's time went, per phase (validation_batch.h).
  virtual const ValidationTimes& times() const = 0;
  // Each following validation also feeds `plots` (reset at its start); null: none.
  virtual void collect_plots(ValPlots* plots) = 0;

 protected:
  ~HostedValidation() = default;
};

// The val sink as a sink its owner configures and hands models to: what a validation
// pipeline consumes its batches with (validation_pipeline.h).
class HostedValidationSink : public Sink, public HostedValidation {
 public:
  // Where the user gave the evaluator ("stages.train.params.evaluator"): its messages name that
  // path instead of the validation pipeline's own. Before configure().
  virtual void name_evaluator(std::string path) = 0;
};
std::unique_ptr<HostedValidationSink> make_hosted_validation_sink();

}  // namespace yoloflow::core
