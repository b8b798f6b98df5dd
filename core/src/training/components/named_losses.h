#pragma once
// A loss's components by name, as the loss plugin names them (Loss::item_names): what the
// trainer's progress lines, results.csv and validation report.
#include <string>
#include <utility>
#include <vector>

namespace yoloflow::core {

// A loss's components by name, in its order: {"box", 1.2}, {"cls", 3.4}, ...
using NamedLosses = std::vector<std::pair<std::string, double>>;

// `values` (one per component) named by `names`.
NamedLosses named_losses(const std::vector<std::string>& names, const std::vector<double>& values);

}  // namespace yoloflow::core
