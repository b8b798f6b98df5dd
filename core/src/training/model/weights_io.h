#pragma once
// Weights files that move between yoloflow and PyTorch: any file a user calls weights (a
// Python `torch.save(state_dict)` file, a yoloflow checkpoint, an Ultralytics checkpoint) is
// read through torch_file.h, which runs nothing and checks everything it reads; and we write
// the zip layout torch.save writes, which a plain Python `torch.load(f)` (weights_only=True)
// reads. Names are the reference implementation's state-dict names ("model.0.conv.weight"),
// which our models use.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

namespace yoloflow::core {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;
class TorchFile;

// Reads a weights file: a dict name -> tensor, a checkpoint dict holding one under `key`
// ("" = the first of "ema", "model", "state_dict" that is a non-empty dict of tensors; a
// yoloflow checkpoint is one), or an Ultralytics checkpoint (its "ema" model when not None,
// else "model"; ultralytics_checkpoint.h). Throws InvalidInput naming the file, in one line,
// when it cannot be read, holds something else, or holds NaN or infinite values.
NamedTensors read_weights(const std::string& path, const std::string& key = "");
// The same from a file already opened.
NamedTensors read_weights(TorchFile& file, const std::string& key = "");

// Throws InvalidInput naming `source`, the first tensor holding NaN or infinite values and how
// many do, when any floating-point tensor of `tensors` does; `entry` says where in the file
// they are ("ema"; "" for none).
void check_finite(const NamedTensors& tensors, const std::string& source, const std::string& entry = "");

// Writes an OrderedDict name -> tensor (CPU, contiguous copies) in the given order, as
// Python's torch.save does. Throws Error naming the file or tensor on failure.
void write_weights(const std::string& path, const NamedTensors& tensors);

// Parameters and buffers of `module` in PyTorch's state_dict order (per module: its own
// parameters, its own buffers, then its children), undefined tensors skipped.
NamedTensors module_state(const torch::nn::Module& module);

struct WeightsMismatch {
  std::vector<std::string> missing;     // in the model, not in the file
  std::vector<std::string> unexpected;  // in the file, not in the model
  std::vector<std::string> wrong_shape; // "name: file [a, b] vs model [c, d]"
  std::vector<std::string> wrong_dtype; // "name: file int64 vs model float32" (dtype_mismatch)
  bool empty() const { return missing.empty() && unexpected.empty() && wrong_shape.empty() && wrong_dtype.empty(); }
  // The problems, one per line: at most `limit` of each kind, then "... and N more".
  std::string describe(std::size_t limit = 10) const;
};

struct LoadOptions {
  // Names whose shape may differ from the file's (the model keeps its initial values for
  // those), e.g. the class head when fine-tuning to another number of classes.
  std::function<bool(const std::string&)> may_differ;
};

struct LoadReport {
  std::size_t loaded = 0;
  std::vector<std::string> kept_initial;  // allowed to differ, left as initialised
};

// The class branch of a YOLO detection head ("model.<detect>.cv3. ..."): the tensors whose
// shapes change with the number of classes (the final conv always; narrower ones in width
// too, c3 = max(ch0, min(nc, 100))), so fine-tuning to another class count keeps them initial.
bool is_class_head_tensor(const std::string& name);

// The number of classes a YOLO-style state dict was trained for (its class branch's final
// conv bias, "model.<detect>.cv3.0.2.bias"); 0 when there is none.
int classes_in(const NamedTensors& weights);

// Why a tensor of the file cannot be put into the model's tensor `into`, as a phrase ("holds
// int64 values where the model's float32 tensor takes floating-point ones"); "" when it can.
// Precision may differ (released weights are float16, the model float32: the copy converts),
// the kind of number may not: an integer tensor where a weight belongs would be taken as
// weights and predict garbage, a float where a counter (num_batches_tracked) belongs would be
// truncated.
std::string dtype_mismatch(const torch::Tensor& into, const torch::Tensor& from_file);

// Throws InvalidInput in one line naming `source` (the file) and `name` when `from_file` cannot
// be copied into the model's `into`: another shape, or dtype_mismatch. For the places that copy
// a file's tensors into a model one by one (a resumed run's checkpoint).
void check_fits(const torch::Tensor& into, const torch::Tensor& from_file, const std::string& name,
                const std::string& source);

// Compares names, shapes and kinds of dtype first; when anything does not match (beyond
// `may_differ`), throws InvalidInput counting the mismatches of each kind and listing the first
// ones, with `source` (the file) in the message (one line when only dtypes differ), and
// changes nothing. Otherwise copies every value into the module (converting precision/device).
LoadReport load_weights(torch::nn::Module& module, const NamedTensors& weights,
                        const std::string& source, const LoadOptions& options = {});

// Only the comparison of load_weights (names and shapes; dtypes of tensors whose shapes fit).
WeightsMismatch compare_weights(const torch::nn::Module& module, const NamedTensors& weights,
                                const LoadOptions& options = {});

}  // namespace yoloflow::core
