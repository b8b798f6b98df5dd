#pragma once
// A component's declared defaults checked against its own schema (type, range, enum choices,
// list lengths, schedules). A default the schema refuses would be accepted everywhere a pipeline
// leaves the parameter out, and refused only when the run's own resolved pipeline.json is read
// again; the plugin loader refuses such a library instead, naming the parameter.
#include <string>
#include <vector>

#include "yoloflow/plugin.h"

namespace yoloflow::core {

// One line per default that `info`'s schema refuses, e.g. "augmentation 'flip' declares
// parameter 'p' with default 1.5, which its own schema refuses: 1.5 is out of range: expected
// float in [0, 1]". Component-typed defaults are checked for their shape only: the component
// they name may come from another library (pipeline validation checks it).
std::vector<std::string> default_problems(const ComponentInfo& info);

}  // namespace yoloflow::core
