#pragma once
// Training checkpoints: everything needed to continue a run exactly where it stopped,
// mid-epoch included. One file, a pickled dict (torch::pickle_save), written atomically, read
// back through training/model/torch_file.h as every weights file is.
// Tensor names follow the model's state dict ("model.0.conv.weight"), so the "model" and
// "ema" entries are plain state dicts that PyTorch can read.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

namespace yoloflow::core {

using TensorList = std::vector<std::pair<std::string, torch::Tensor>>;
class TorchFile;

struct Checkpoint {
  TensorList model;      // raw weights and buffers
  TensorList ema;        // the weights to deploy, a callback's average (what val, predict and export use)
  TensorList optimizer;  // optimizer state (momentum buffers, Adam moments)
  TensorList precision;  // loss scaler state
  TensorList grads;      // gradients accumulated since the last optimizer step (mid-accumulation stop)
  std::map<std::string, TensorList> callbacks;  // each callback's own tensors, by callback name
  std::int64_t ema_updates = 0;     // optimizer steps `ema` averages
  int epoch = 0;                    // epoch in progress (0-based)
  std::int64_t step_in_epoch = 0;   // batches of `epoch` already trained
  std::uint64_t next_sequence = 0;  // position in `epoch`'s sample order to continue from
  std::int64_t global_step = 0;     // optimizer steps so far
  double best_fitness = -1.0;
  nlohmann::json meta = nlohmann::json::object();  // pipeline, RNG and data-order state, names...
};

// Writes atomically (a kill at any instant leaves the previous file or this one).
void save_checkpoint(const std::string& path, const Checkpoint& checkpoint);
// The file's bytes, and writing them atomically: save_checkpoint in two parts, so that one
// pickling serves several files (checkpoint_writer.h).
std::vector<char> serialize_checkpoint(const Checkpoint& checkpoint);
void write_checkpoint_bytes(const std::string& path, const std::vector<char>& bytes);
// Reads a checkpoint through torch_file.h (checked, nothing run). Throws InvalidInput in one
// line naming the file when it is missing, not a regular file, empty, truncated, damaged, not
// a yoloflow checkpoint, or its model or EMA weights hold NaN or infinite values.
Checkpoint load_checkpoint(const std::string& path);
// Whether an opened file is a yoloflow checkpoint (a dict whose "format" entry says so), and
// reading it (throws as load_checkpoint does).
bool is_yoloflow_checkpoint(const TorchFile& file);
Checkpoint read_checkpoint(TorchFile& file);
// What a run's best.pt holds, as Ultralytics' best.pt does: the weights to deploy (the EMA, else
// the raw weights) in float16 and the run's description (meta, epoch, fitness), without the
// raw weights, optimizer, scaler or callback state that only a resume needs: a fraction of
// last.pt's size. Such a file validates, predicts, exports and is fine-tuned from; a resume
// refuses it (deployable_only).
Checkpoint deployable_checkpoint(const Checkpoint& checkpoint);
bool deployable_only(const Checkpoint& checkpoint);

// Name -> tensor view of a list, for load_state() calls.
std::map<std::string, torch::Tensor> to_map(const TensorList& list);

}  // namespace yoloflow::core
