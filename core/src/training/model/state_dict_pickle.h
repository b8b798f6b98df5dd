#pragma once
// The pickle inside a Python `torch.save(state_dict, f)` zip archive (its `data.pkl`),
// emitted byte for byte as Python's pickler writes it (protocol 2): an
// collections.OrderedDict name -> tensor, each tensor rebuilt by
// torch._utils._rebuild_tensor_v2 from a persistent storage id. Every global it names is
// on PyTorch's weights_only allowlist, so a plain `torch.load(f)` reads it in PyTorch >= 2.6.
// The reverse, reading any weights file's pickle, is restricted_unpickler.h. Torch-free on
// purpose: it only handles bytes.
#include <cstdint>
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

}  // namespace yoloflow::core
