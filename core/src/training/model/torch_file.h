#pragma once
// A file of PyTorch's own format, as torch.save (Python) and torch::pickle_save (LibTorch)
// write it: a zip archive of `<name>/data.pkl` (the pickled object), `<name>/byteorder` and
// one `<name>/data/<key>` record of raw bytes per tensor storage. Whatever a user calls
// "weights" comes through here: state dicts, yoloflow's training checkpoints and Ultralytics'
// checkpoints. Read safely: the file must be a regular file and is read no further than its
// size (runtime/util/file_checks.h); the archive is checked, every entry's CRC-32 included (zip_archive.h);
// the pickle is read by an unpickler that calls nothing (restricted_unpickler.h); a tensor is
// made only when its storage record holds exactly the bytes its dtype and size need, and the
// shape it declares passes declared_tensor.h (inside that storage, within the budget of one
// tensor) before anything is allocated. Every tensor any reader takes from a file is made by
// TorchFile::tensor, so these checks hold for every command that reads weights.
// Every problem is one line naming the file (InvalidInput): "is empty (0 bytes)", "is
// truncated: a zip archive cut at N bytes ...", "is not a PyTorch file: it starts with text
// ...", "...: its data.pkl names a forbidden global 'os.system' at byte N".
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>

#include <torch/torch.h>

#include "training/model/restricted_unpickler.h"
#include "training/model/zip_archive.h"

namespace yoloflow::core {

class TorchFile {
 public:
  // Reads and checks `path`. `name` is what messages call it, and start with ("--weights
  // x.pt"); "" = "weights file 'x.pt'". Throws InvalidInput.
  static TorchFile open(const std::string& path, const std::string& name = "");

  const std::string& path() const { return path_; }
  // What messages about the file start with: "weights file 'x.pt'".
  const std::string& name() const { return name_; }
  const PickleValue& root() const { return *root_; }

  // The tensor a Tensor value stands for, viewing its storage (read once per storage, on the
  // CPU). Throws InvalidInput naming the file and `what` (the tensor's name, for messages)
  // when the shape it declares is refused (declared_tensor.h), or when the tensors taken from
  // the file so far declare more than the file's size plus kMaxTensorBytes: views may share
  // storage, but not repeat it without end.
  torch::Tensor tensor(const PickleValue& value, const std::string& what);

 private:
  TorchFile() = default;

  std::string path_, name_;
  std::shared_ptr<const std::string> bytes_;
  std::shared_ptr<const ZipArchive> zip_;
  std::string prefix_;  // "archive/": the folder every record is in
  std::shared_ptr<const PickleValue> root_;
  std::map<std::string, torch::Tensor> storages_;
  std::set<const PickledTensor*> counted_;  // the tensors whose bytes declared_bytes_ holds
  std::uint64_t declared_bytes_ = 0;
};

// Python's storage class (module torch) for a dtype: "FloatStorage", "HalfStorage"...; "" when
// PyTorch has none.
std::string storage_class(c10::ScalarType dtype);

// A dtype as PyTorch's Python names it, for messages: "float32", "float16", "int64", "bool".
std::string dtype_name(c10::ScalarType dtype);

}  // namespace yoloflow::core
