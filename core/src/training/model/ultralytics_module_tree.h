#pragma once
// The module tree of an Ultralytics checkpoint's pickled model (ultralytics_checkpoint.h): each
// nn.Module is an object whose pickled state (its __dict__) holds `_parameters`, `_buffers` and
// `_modules`. Walking them in nn.Module.state_dict()'s order gives the weights under the names
// Python gives them ("model.0.conv.weight"), which are our model's names too.
#include <string>

#include "training/model/torch_file.h"
#include "training/model/weights_io.h"

namespace yoloflow::core {

// The state dict of the module tree under `model`, as nn.Module.state_dict() walks it: per
// module its parameters, its persistent buffers, then its children in order; dtypes as stored.
// Throws InvalidInput naming the file when a module has no pickled state dict, a name is not a
// string, or the tree is larger or deeper than any YOLO11's by far.
NamedTensors ultralytics_state_dict(TorchFile& file, const PickleValue& model);

// The child module `name` of `module` (its `_modules` entry); null when it has none, or when
// `module` is null or not a module.
const PickleValue* ultralytics_child_module(const PickleValue* module, const std::string& name);

}  // namespace yoloflow::core
