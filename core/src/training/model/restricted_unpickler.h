#pragma once
// A pickle (protocols 2 to 5) read without running it. Python's unpickler imports every
// global a pickle names and calls whatever it says, which is how a weights file can run code
// on `torch.load(weights_only=False)`; this one calls nothing. A global the pickle names must
// come from an allowlist of modules (what PyTorch, LibTorch and Ultralytics write, below) and
// becomes an inert object: its class name, the arguments it was given, the state BUILD set on
// it and the list or dict items added to it. Only the data-only constructions are carried
// out: dicts (collections.OrderedDict), sets, LibTorch's type tags and typed lists, and
// PyTorch's tensor rebuild functions, which here only record which storage record, offset,
// sizes and strides a tensor has (torch_file.h reads the bytes).
// Bounded: every length is checked against the bytes left, and the values it makes are
// counted. Values live in one arena and point at each other without owning, so cycles and deep
// nesting cost no recursion when freed. Torch-free: it only handles bytes.
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "training/model/state_dict_pickle.h"

namespace yoloflow::core {

struct PickleValue {
  enum class Kind { None, Bool, Int, Float, String, Bytes, Tuple, List, Dict, Set, Global, Object, Storage, Tensor };
  Kind kind = Kind::None;
  bool b = false;
  std::int64_t i = 0;
  double f = 0;
  // String, Bytes: the value; Global: "module.name"; Object: its class, "module.name".
  std::string s;
  // Tuple, List, Set: the items; Dict: key, value, key, value... in insertion order;
  // Object: what APPEND(S) added (list subclasses).
  std::vector<PickleValue*> items;
  // Object only.
  PickleValue* args = nullptr;    // the constructor arguments (a Tuple); null when none
  PickleValue* kwargs = nullptr;  // NEWOBJ_EX's keyword arguments (a Dict); null when none
  PickleValue* state = nullptr;   // what BUILD set (usually the object's __dict__); null when none
  std::vector<PickleValue*> dict_items;  // what SETITEM(S) added (dict subclasses): key, value...
  // Storage: storage_type, storage_key, storage_numel; Tensor: all of it.
  std::unique_ptr<PickledTensor> tensor;
  // Dict only: "s" + a string key or "i" + an int key -> its position in `items`, so that
  // lookups and repeated keys cost no scan of a large dict.
  std::unordered_map<std::string, std::size_t> key_index;

  // A Dict's value under the string `key`; null when absent (or not a Dict).
  const PickleValue* get(const std::string& key) const;
  // "dict", "tensor", "object ultralytics.nn.tasks.DetectionModel"...: for messages.
  std::string describe() const;
};

// Thrown for a global outside the allowlist, an unknown opcode, a malformed or truncated pickle.
// The message ends with "at byte N", N the offset of the opcode in the pickle (also `offset`).
struct UnsupportedPickle : std::runtime_error {
  UnsupportedPickle(const std::string& reason, std::size_t at)
      : std::runtime_error(reason + " at byte " + std::to_string(at)), reason(reason), offset(at) {}
  std::string reason;  // the message without its offset
  std::size_t offset = 0;
};

// The most values one pickle may make (a yolo11x checkpoint makes about 60,000).
constexpr std::size_t kMaxPickleValues = 4'000'000;

// Whether a pickle may name the global `module.name`:
//   ultralytics.*; torch.nn.modules.* and torch.nn.parameter classes; torch.Size, torch.device,
//   the dtypes and the torch.<Type>Storage classes; torch._utils' tensor rebuild functions;
//   LibTorch's torch.jit._pickle type tags and typed lists; collections.OrderedDict and
//   defaultdict; builtins (or __builtin__) set and frozenset; numpy's dtype, scalar and array
//   reconstruction; _codecs.encode (how protocol 2 writes bytes); pathlib's paths; datetime's
//   date, time, datetime, timedelta and timezone.
bool is_allowed_global(const std::string& module, const std::string& name);

// Reads the pickle in `bytes` (which need not outlive the result). Throws UnsupportedPickle.
std::shared_ptr<const PickleValue> unpickle(std::string_view bytes);

}  // namespace yoloflow::core
