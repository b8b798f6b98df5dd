#include "param_checks.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

namespace yoloflow::detail {

namespace {

// Whether `d` (finite, whole) is an int64: [-2^63, 2^63), exactly representable at both ends.
bool fits_int64(double d) { return d >= -9223372036854775808.0 && d < 9223372036854775808.0; }

// nan, inf, -inf, infinity in any case: what Python prints for non-finite floats.
bool names_non_finite(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.erase(0, 1);
  return s == "nan" || s == "inf" || s == "infinity";
}

}  // namespace

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
  // NaN compares false with every bound and infinity passes a one-sided range: neither is a value
  // any parameter takes (JSON has neither; 1e400 in a file or a word overflows to infinity).
  if (!std::isfinite(d)) {
    out.push_back({path, number_text(d) + " is not a finite number: expected " + spec.describe_type()});
    return;
  }
  // An int parameter is read as a 64-bit integer (Params::get_int): a value beyond one would wrap
  // around, whatever range the schema declares.
  if (spec.type == ParamType::Int && !fits_int64(d)) {
    out.push_back({path, number_text(d) + " is out of range: expected " + spec.describe_type() +
                             (spec.hi || spec.lo ? "" : " (a 64-bit integer)")});
    return;
  }
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
    if (names_non_finite(s)) {
      // Python's float('nan') and float('inf') spellings: a number no parameter takes.
      out.push_back({path, s + " is not a finite number: expected " + spec.describe_type()});
      return;
    }
    std::string msg = "expected " + spec.describe_type() + ", got the string \"" + s + "\"";
    const auto guess = closest_name(s, spec.specials);
    if (!guess.empty()) msg += "; did you mean \"" + guess + "\"?";
    out.push_back({path, msg});
    return;
  }
  if (spec.fraction && v.is_number() && !v.is_boolean() && v.get<double>() > 0.0 && v.get<double>() < 1.0) return;
  // A whole number too large to be held exactly is read as a float (99999999999999999999 is
  // 1e+20): out of range, not "not an int".
  const bool whole = v.is_number_float() && std::isfinite(v.get<double>()) && std::floor(v.get<double>()) == v.get<double>();
  if (spec.type == ParamType::Int && whole && !is_integral_number(v)) {
    out.push_back({path, number_text(v.get<double>()) + " is out of range: expected " + spec.describe_type() +
                             (spec.hi ? "" : " (whole numbers up to 9e15)")});
    return;
  }
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
