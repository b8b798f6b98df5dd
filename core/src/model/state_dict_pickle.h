#pragma once
// The pickle inside a Python `torch.save(state_dict, f)` zip archive (its `data.pkl`),
// emitted byte for byte as Python's pickler writes it (protocol 2): an
// collections.OrderedDict name -> tensor, each tensor rebuilt by
// torch._utils._rebuild_tensor_v2 from a persistent storage id. Every global it names is
// on PyTorch's weights_only allowlist, so a plain `torch.load(f)` reads it in PyTorch >= 2.6.
// Also the reverse: a restricted unpickler for such files, which (unlike LibTorch's, which
// turns collections.OrderedDict into None) reads the OrderedDict that Python's
// `torch.save(model.state_dict(), f)` writes. Torch-free on purpose: it only handles bytes.
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace yoloflow::core {

struct PickledTensor {
  std::string name;          // state-dict key, e.g. "model.0.conv.weight"
  std::string storage_type;  // class in module torch, e.g. "FloatStorage"
  std::string storage_key;   // record `data/<key>` in the archive
  std::int64_t storage_numel = 0;  // elements in that storage
  std::int64_t storage_offset = 0;
  std::vector<std::int64_t> sizes;
  std::vector<std::int64_t> strides;
};

// The complete pickle (PROTO 2 ... STOP) of an OrderedDict holding `tensors` in order.
std::string pickle_state_dict(const std::vector<PickledTensor>& tensors);

// What the unpickler builds. Dicts keep insertion order (`items` holds key, value, key, ...).
struct PickleValue {
  enum class Kind { None, Bool, Int, Float, String, Tuple, List, Dict, Global, Storage, Tensor };
  Kind kind = Kind::None;
  bool b = false;
  std::int64_t i = 0;
  double f = 0;
  std::string s;  // String; Global: "module.name"
  std::vector<std::shared_ptr<PickleValue>> items;
  PickledTensor tensor;  // Storage: storage_type, storage_key, storage_numel; Tensor: all of it
};

// Thrown for anything outside what torch.save and LibTorch's pickler write for plain data
// and tensors (arbitrary classes, unknown opcodes, truncated data).
struct UnsupportedPickle : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Reads a pickle (protocols 2 to 4). Like PyTorch's weights_only loader it calls nothing but
// an allowlist: collections.OrderedDict, torch._utils._rebuild_tensor(_v2) and
// _rebuild_parameter, and torch.jit._pickle.restore_type_tag (LibTorch's type tags).
std::shared_ptr<PickleValue> unpickle(const std::string& bytes);

}  // namespace yoloflow::core
