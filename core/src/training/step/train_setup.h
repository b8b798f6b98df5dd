#pragma once
// What the trainer builds from the train stage's parameters before training, beside the parts
// of training_parts.h: the model spec sized to the dataset's classes, the initial weights, and
// the validation of each epoch.
#include <memory>
#include <string>
#include <vector>

#include "training/eval/validation_pipeline.h"
#include "yoloflow/component.h"
#include "yoloflow/model.h"
#include "yoloflow/params.h"

namespace yoloflow::core {

// The stage's `model` spec with the head's class count following the dataset (`dataset_nc`)
// unless the pipeline sets it; a count that disagrees with the dataset is refused, named by its
// JSON path (under p.where()).
json model_spec_for_dataset(const Params& p, int dataset_nc);

// Fine-tuning: the pretrained tensors of `file` (a state dict, a yoloflow checkpoint's EMA, an
// Ultralytics checkpoint), except a class head sized for another number of classes than the
// dataset's `names`. Refused, naming `json_path` and the file, when the file cannot be read or
// holds another architecture.
void load_initial_weights(Model& model, const std::string& file, const std::vector<std::string>& names,
                          const std::string& json_path);

// Why a sink whose `val_source` is null cannot train (the pipeline gave it no source to share).
std::string no_validation_source_message();

// The validation split of the stage's `data`, with its validation parameters.
std::unique_ptr<ValidationPipeline> open_training_validation(const Registry& registry, const Params& p,
                                                             const StageContext& ctx);

}  // namespace yoloflow::core
