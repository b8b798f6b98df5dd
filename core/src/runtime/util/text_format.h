#pragma once
// Numbers as the console prints them.
#include <iomanip>
#include <sstream>
#include <string>

namespace yoloflow::core {

// `v` with `digits` digits after the point ("12.35").
inline std::string format_fixed(double v, int digits) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}

}  // namespace yoloflow::core
