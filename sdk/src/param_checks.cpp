#include "param_checks.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace yoloflow::detail {

std::string number_text(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

bool is_integral_number(const json& v) {
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  return std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9.0e15;
}

std::string value_text(const json& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

std::string json_kind(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a bool";
  if (v.is_number_integer()) return "an int";
  if (v.is_number()) return "a float";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "a list";
  return "an object";
}

void check_range(double d, const ParamSpec& spec, const std::string& path, Diagnostics& out) {
  const bool below = spec.lo && (spec.lo_exclusive ? d <= *spec.lo : d < *spec.lo);
  const bool above = spec.hi && d > *spec.hi;
  if (below || above) {
    out.push_back({path, number_text(d) + " is out of range: expected " + spec.describe_type()});
  }
}

void check_number(const json& v, const ParamSpec& spec, const std::string& path,
                  Diagnostics& out) {
  if (v.is_string()) {
    const auto s = v.get<std::string>();
    if (std::find(spec.specials.begin(), spec.specials.end(), s) != spec.specials.end()) return;
    std::string msg = "expected " + spec.describe_type() + ", got the string \"" + s + "\"";
    const auto guess = closest_name(s, spec.specials);
    if (!guess.empty()) msg += "; did you mean \"" + guess + "\"?";
    out.push_back({path, msg});
    return;
  }
  if (spec.fraction && v.is_number() && !v.is_boolean() && v.get<double>() > 0.0 && v.get<double>() < 1.0) return;
  if (spec.type == ParamType::Int && !is_integral_number(v)) {
    out.push_back({path, "expected " + spec.describe_type() + ", got " + json_kind(v) + " (" +
                             value_text(v) + ")"});
    return;
  }
  if (spec.type == ParamType::Float && (!v.is_number() || v.is_boolean())) {
    out.push_back({path, "expected " + spec.describe_type() + ", got " + json_kind(v) + " (" +
                             value_text(v) + ")"});
    return;
  }
  check_range(v.get<double>(), spec, path, out);
}

}  // namespace yoloflow::detail
