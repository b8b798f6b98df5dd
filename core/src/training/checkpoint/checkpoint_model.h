#pragma once
// A training checkpoint's network, rebuilt from what the checkpoint says about itself and
// loaded, for the consumers of trained weights: `yoloflow predict`, and the `predict` and
// `val` sinks, `yoloflow val`, `export` and `info`.
#include <memory>
#include <string>

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include "runtime/plugin/registry.h"
#include "yoloflow/model.h"

namespace yoloflow::core {

// How to rebuild the network a checkpoint holds.
struct CheckpointModel {
  nlohmann::json spec;             // {"plugin": NAME, "params": {...}}
  std::vector<std::string> names;  // class names; empty when the checkpoint names none
  std::string origin;              // where `spec` came from, for messages
  nlohmann::json pipeline;         // the pipeline that trained it; null when neither it nor its run folder has one
  std::string pipeline_origin;     // where `pipeline` came from, for messages
};

// Reads the model description of a checkpoint's meta: its "model" entry (written since
// predict exists), else the train sink's model in its "pipeline" entry, else in the
// pipeline.json of the run folder above `checkpoint_path` (older checkpoints), else its
// "architecture" name; `pipeline` likewise from its "pipeline" entry or that pipeline.json.
// Throws InvalidInput naming the file and what is missing.
CheckpointModel describe_checkpoint_model(const nlohmann::json& meta, const std::string& checkpoint_path);


struct LoadedCheckpointModel {
  std::unique_ptr<Model> model;  // in eval mode on the device asked for
  CheckpointModel described;     // names filled in up to the head's nc ("7" for an unnamed class 7)
  std::string weights_kind;      // "EMA", "raw", "state dict", "Ultralytics EMA" or "Ultralytics"
  // What the file says of itself, for `yoloflow info`: an Ultralytics checkpoint's "version",
  // "date", "epoch", "train_args" and "train_metrics"; a yoloflow checkpoint's "epoch",
  // "global_step" and "best_fitness"; "format" ("ultralytics", "yoloflow", "state dict") and
  // "dtype" of the stored weights for every file.
  nlohmann::ordered_json about = nlohmann::ordered_json::object();
};

// `weights`: a checkpoint of `yoloflow train` (its EMA weights when it has them), an
// Ultralytics checkpoint (yolo11n.pt, a run's best.pt: its architecture, class names and EMA
// or model weights; `architecture`, when given, must agree), or a plain PyTorch state dict
// (torch.save(model.state_dict()), `yoloflow weights export`), which does not say which model
// it holds: `architecture` ("yolo11n") names it, nc comes from the file.
// `option` names where `weights` came from in messages ("--weights", "stages.val.params.weights");
// `architecture_option` where the architecture came from ("--model").
// Throws InvalidInput / Error in one line naming the file when it is missing, neither kind of
// file, or does not fit.
// The image size to use when none is given, as Ultralytics' val, predict and export keep a
// checkpoint's: an Ultralytics checkpoint's training imgsz, a yoloflow checkpoint's pipeline
// imgsz (its last epoch's, when it follows a schedule), else 640 (checkpoint_defaults.cpp).
int default_imgsz(const LoadedCheckpointModel& loaded);

// The dataset to validate on when none is given: the data.yaml a yoloflow checkpoint's pipeline
// trained on, or an Ultralytics checkpoint's train_args data, when that file exists; "" when
// the file names none that exists.
std::string default_data(const LoadedCheckpointModel& loaded);

LoadedCheckpointModel load_checkpoint_model(const Registry& registry, const std::string& weights,
                                            const torch::Device& device, const std::string& option,
                                            const std::string& architecture = "",
                                            const std::string& architecture_option = "--model");

}  // namespace yoloflow::core
