#pragma once
// The parts of a training run that the train stage's parameters describe, made in one place
// for the trainer and for auto batch (which profiles the step the trainer will run): the model
// sized to the dataset's classes with its initial weights and frozen layers, the precision strategy the device
// can run, the loss set up on the model's head, the scheduler and the optimizer. Each is made
// through the registry with its JSON path ("stages.train.params.model") and guarded, so that
// its failures name it (guarded_components.h); each default is the schema's, read through the
// stage's resolved parameters, never written again here.
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "runtime/plugin/registry.h"
#include "training/components/batch_targets.h"
#include "training/step/frozen_layers.h"
#include "training/step/scheduled_loss.h"
#include "yoloflow/component.h"
#include "yoloflow/model.h"
#include "yoloflow/optimizer.h"
#include "yoloflow/params.h"
#include "yoloflow/precision.h"
#include "yoloflow/scheduler.h"

namespace yoloflow::core {

class TrainingPartsBuilder {
 public:
  // `params`: the train stage's resolved parameters at the epoch being built for (Params::where()
  // is "stages.train.params"); `context`: the stage's, with the device it trains on.
  TrainingPartsBuilder(const Registry& registry, Params params, StageContext context);

  const Params& params() const { return params_; }
  // What a component the stage's parameter `param` names sees: its JSON path and the device.
  StageContext component_context(const std::string& param) const;

  // The `model` spec with the head's class count following the dataset's (`names`) unless the
  // pipeline sets it; a count that disagrees with the dataset is refused.
  json model_spec(const std::vector<std::string>& names) const;
  // The model of model_spec(), its initial `weights` loaded unless `initial_weights` is false
  // (a resumed run takes its checkpoint's), on the CPU.
  std::unique_ptr<Model> model(const std::vector<std::string>& names, bool initial_weights) const;
  // The stage's `freeze` layers of `model` frozen (frozen_layers.h); refused at the `freeze`
  // path when a layer does not exist or nothing would be left to train.
  FrozenLayers freeze(Model& model) const;
  // Refused (InvalidInput at the `precision` path) when it cannot run on `device`. `spec` and
  // `param`: another strategy than `precision` (a `precision_schedule` entry, at that path).
  std::unique_ptr<PrecisionStrategy> precision(const torch::Device& device) const;
  std::unique_ptr<PrecisionStrategy> precision(const torch::Device& device, const json& spec,
                                               const std::string& param) const;
  // Set up on `head`; refused when it names no components.
  std::unique_ptr<ScheduledLoss> loss(const HeadDescription& head) const;
  std::unique_ptr<Scheduler> scheduler() const;
  std::unique_ptr<Optimizer> optimizer() const;
  TargetRows target_rows() const;

 private:
  template <class T>
  std::unique_ptr<T> make(Kind kind, const std::string& param, const json& spec) const;

  const Registry& registry_;
  Params params_;
  StageContext context_;
};

}  // namespace yoloflow::core
