// Resolved parameter values as a component reads them, each read checked for its type.
#include "yoloflow/params.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>

#include "param_checks.h"
#include "yoloflow/error.h"

namespace yoloflow {

using namespace detail;

Params::Params(json values, std::string where) : values_(std::move(values)), where_(std::move(where)) {
  if (!values_.is_object()) values_ = json::object();
}

bool Params::has(const std::string& name) const { return values_.contains(name); }
bool Params::is_null(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() || it->is_null();
}

const json& Params::at(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end() || it->is_null()) {
    throw Error(where_ + "." + name + ": the component asked for a parameter that has no value "
                "(missing from its schema or without default)");
  }
  return *it;
}

namespace {
[[noreturn]] void wrong_type(const std::string& where, const std::string& name, const char* want,
                             const json& v) {
  throw Error(where + "." + name + ": the component read it as " + want + " but it holds " +
              json_kind(v) + " (" + value_text(v) + ")");
}
}  // namespace

bool Params::get_bool(const std::string& name) const {
  const auto& v = at(name);
  if (!v.is_boolean()) wrong_type(where_, name, "bool", v);
  return v.get<bool>();
}
std::int64_t Params::get_int(const std::string& name) const {
  const auto& v = at(name);
  if (!is_integral_number(v)) wrong_type(where_, name, "int", v);
  return v.is_number_integer() ? v.get<std::int64_t>()
                               : static_cast<std::int64_t>(std::llround(v.get<double>()));
}
double Params::get_float(const std::string& name) const {
  const auto& v = at(name);
  if (!v.is_number() || v.is_boolean()) wrong_type(where_, name, "float", v);
  return v.get<double>();
}
std::string Params::get_string(const std::string& name) const {
  const auto& v = at(name);
  if (!v.is_string()) wrong_type(where_, name, "string", v);
  return v.get<std::string>();
}
std::vector<std::int64_t> Params::get_ints(const std::string& name) const {
  const auto& v = at(name);
  std::vector<std::int64_t> out;
  if (!v.is_array()) wrong_type(where_, name, "int list", v);
  for (const auto& e : v) {
    if (!is_integral_number(e)) wrong_type(where_, name, "int list", v);
    out.push_back(static_cast<std::int64_t>(std::llround(e.get<double>())));
  }
  return out;
}
std::vector<double> Params::get_floats(const std::string& name) const {
  const auto& v = at(name);
  std::vector<double> out;
  if (!v.is_array()) wrong_type(where_, name, "float list", v);
  for (const auto& e : v) {
    if (!e.is_number()) wrong_type(where_, name, "float list", v);
    out.push_back(e.get<double>());
  }
  return out;
}
const json& Params::get_json(const std::string& name) const { return at(name); }
bool Params::is_special(const std::string& name, const std::string& special) const {
  auto it = values_.find(name);
  return it != values_.end() && it->is_string() && it->get<std::string>() == special;
}

}  // namespace yoloflow
