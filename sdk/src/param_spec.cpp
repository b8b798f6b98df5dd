// A parameter's declaration: the builder a schema is written with, and its one-line description.
#include "yoloflow/params.h"

#include <sstream>

#include "param_checks.h"

namespace yoloflow {

using namespace detail;

const char* param_type_name(ParamType type) {
  switch (type) {
    case ParamType::Bool: return "bool";
    case ParamType::Int: return "int";
    case ParamType::Float: return "float";
    case ParamType::String: return "string";
    case ParamType::Enum: return "enum";
    case ParamType::Path: return "path";
    case ParamType::IntList: return "int list";
    case ParamType::FloatList: return "float list";
    case ParamType::Json: return "json";
    case ParamType::Component: return "component";
    case ParamType::ComponentList: return "component list";
  }
  return "unknown";
}

// ---------------------------------------------------------------- ParamSpec builder

ParamSpec::ParamSpec(std::string n, ParamType t) : name(std::move(n)), type(t) {}
ParamSpec& ParamSpec::default_value(json value) {
  default_json = std::move(value);
  return *this;
}
ParamSpec& ParamSpec::required() {
  is_required = true;
  default_json = nullptr;
  return *this;
}
ParamSpec& ParamSpec::range(double l, double h) {
  lo = l;
  hi = h;
  return *this;
}
ParamSpec& ParamSpec::min(double l) {
  lo = l;
  return *this;
}
ParamSpec& ParamSpec::max(double h) {
  hi = h;
  return *this;
}
ParamSpec& ParamSpec::greater_than(double l) {
  lo = l;
  lo_exclusive = true;
  return *this;
}
ParamSpec& ParamSpec::length(std::size_t a, std::size_t b) {
  min_len = a;
  max_len = b;
  return *this;
}
ParamSpec& ParamSpec::choices(std::vector<std::string> values) {
  enum_choices = std::move(values);
  return *this;
}
ParamSpec& ParamSpec::accepts(std::string special) {
  specials.push_back(std::move(special));
  return *this;
}
ParamSpec& ParamSpec::accepts_fraction() {
  fraction = true;
  return *this;
}
ParamSpec& ParamSpec::fixed() {
  schedulable = false;
  return *this;
}
ParamSpec& ParamSpec::doc(std::string text) {
  doc_text = std::move(text);
  return *this;
}
ParamSpec& ParamSpec::component_kind(std::string k) {
  kind = std::move(k);
  return *this;
}
ParamSpec& ParamSpec::role(ParamRole r) {
  param_role = r;
  return *this;
}

const char* param_role_name(ParamRole role) {
  switch (role) {
    case ParamRole::None: return "none";
    case ParamRole::Dataset: return "dataset";
    case ParamRole::Split: return "split";
    case ParamRole::ValidationSplit: return "validation split";
    case ParamRole::ValidationSource: return "validation source";
    case ParamRole::ValidationTransform: return "validation transform";
    case ParamRole::ValidationBatcher: return "validation batcher";
  }
  return "?";
}

namespace {

std::string quoted_list(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += "\"" + items[i] + "\"";
  }
  return out;
}

std::string bounds_text(const ParamSpec& s) {
  if (s.lo && s.hi && !s.lo_exclusive) {
    return " in [" + number_text(*s.lo) + ", " + number_text(*s.hi) + "]";
  }
  std::string out;
  if (s.lo) out += (s.lo_exclusive ? " > " : " >= ") + number_text(*s.lo);
  if (s.hi) out += std::string(s.lo ? " and" : "") + " <= " + number_text(*s.hi);
  return out;
}

}  // namespace

std::string ParamSpec::describe_type() const {
  std::string out;
  switch (type) {
    case ParamType::Enum: return "one of " + quoted_list(enum_choices);
    case ParamType::Component: return "component (" + kind + " plugin)";
    case ParamType::ComponentList: return "list of components (" + kind + " plugins)";
    case ParamType::IntList:
    case ParamType::FloatList: {
      out = "list of ";
      if (min_len == max_len) {
        out += std::to_string(min_len) + " ";
      } else if (max_len != static_cast<std::size_t>(-1)) {
        out += std::to_string(min_len) + ".." + std::to_string(max_len) + " ";
      }
      out += type == ParamType::IntList ? "ints" : "floats";
      return out + bounds_text(*this);
    }
    default: break;
  }
  out = param_type_name(type);
  if (is_numeric()) out += bounds_text(*this);
  if (!specials.empty()) out += " or " + quoted_list(specials);
  if (fraction) out += " or a fraction in (0, 1)";
  return out;
}

}  // namespace yoloflow
