#include "training/components/named_losses.h"

namespace yoloflow::core {

NamedLosses named_losses(const std::vector<std::string>& names, const std::vector<double>& values) {
  NamedLosses out;
  for (std::size_t i = 0; i < names.size() && i < values.size(); ++i) out.emplace_back(names[i], values[i]);
  return out;
}

}  // namespace yoloflow::core
