// A component's schema: its parameters in order, lookups by name and role, defaults resolved with
// schedules, and its JSON description.
#include "yoloflow/params.h"

#include <map>
#include <string>

namespace yoloflow {

ParamSpec& Schema::add(std::string name, ParamType type) {
  params_.emplace_back(std::move(name), type);
  return params_.back();
}
ParamSpec& Schema::add_bool(std::string name, bool v) {
  return add(std::move(name), ParamType::Bool).default_value(v);
}
ParamSpec& Schema::add_int(std::string name, std::int64_t v) {
  return add(std::move(name), ParamType::Int).default_value(v);
}
ParamSpec& Schema::add_int(std::string name) { return add(std::move(name), ParamType::Int); }
ParamSpec& Schema::add_float(std::string name, double v) {
  return add(std::move(name), ParamType::Float).default_value(v);
}
ParamSpec& Schema::add_float(std::string name) { return add(std::move(name), ParamType::Float); }
ParamSpec& Schema::add_string(std::string name, std::string v) {
  return add(std::move(name), ParamType::String).default_value(std::move(v));
}
ParamSpec& Schema::add_string(std::string name) { return add(std::move(name), ParamType::String); }
ParamSpec& Schema::add_path(std::string name) { return add(std::move(name), ParamType::Path); }
ParamSpec& Schema::add_enum(std::string name, std::vector<std::string> choices, std::string v) {
  return add(std::move(name), ParamType::Enum).choices(std::move(choices)).default_value(v);
}
ParamSpec& Schema::add_int_list(std::string name, std::vector<std::int64_t> v) {
  return add(std::move(name), ParamType::IntList).default_value(v);
}
ParamSpec& Schema::add_float_list(std::string name, std::vector<double> v) {
  return add(std::move(name), ParamType::FloatList).default_value(v);
}
ParamSpec& Schema::add_json(std::string name, json v) {
  return add(std::move(name), ParamType::Json).default_value(std::move(v));
}
ParamSpec& Schema::add_component(std::string name, std::string kind, json v) {
  return add(std::move(name), ParamType::Component).component_kind(std::move(kind)).default_value(
      std::move(v));
}

ParamSpec& Schema::add_component_list(std::string name, std::string kind, json v) {
  return add(std::move(name), ParamType::ComponentList).component_kind(std::move(kind)).default_value(
      std::move(v));
}

const ParamSpec* Schema::find(const std::string& name) const {
  for (const auto& p : params_) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

const ParamSpec* Schema::find_role(ParamRole role) const {
  if (role == ParamRole::None) return nullptr;
  for (const auto& p : params_) {
    if (p.param_role == role) return &p;
  }
  return nullptr;
}

std::vector<std::string> Schema::names() const {
  std::vector<std::string> out;
  for (const auto& p : params_) out.push_back(p.name);
  return out;
}

void Schema::add_moved(std::string name, std::string to) { moved_[std::move(name)] = std::move(to); }

json Schema::resolve(const json& params, int epoch, int epochs) const {
  json out = json::object();
  for (const auto& spec : params_) {
    json v = spec.default_json;
    if (params.is_object()) {
      auto it = params.find(spec.name);
      if (it != params.end() && !it->is_null()) v = *it;
    }
    if (spec.is_numeric() && is_schedule(v)) v = evaluate_schedule(v, spec, epoch, epochs);
    if (spec.type == ParamType::Int && v.is_number_float()) {
      v = static_cast<std::int64_t>(std::llround(v.get<double>()));
    }
    out[spec.name] = v;
  }
  return out;
}

std::vector<std::string> Schema::scheduled(const json& params) const {
  std::vector<std::string> out;
  if (!params.is_object()) return out;
  for (const auto& spec : params_) {
    auto it = params.find(spec.name);
    if (it != params.end() && spec.is_numeric() && is_schedule(*it)) out.push_back(spec.name);
  }
  return out;
}

json Schema::to_json() const {
  json arr = json::array();
  for (const auto& s : params_) {
    json p;
    p["name"] = s.name;
    p["type"] = param_type_name(s.type);
    p["accepts"] = s.describe_type();
    p["required"] = s.is_required;
    p["default"] = s.default_json;
    if (s.lo) p[s.lo_exclusive ? "greater_than" : "min"] = *s.lo;
    if (s.hi) p["max"] = *s.hi;
    if (!s.enum_choices.empty()) p["choices"] = s.enum_choices;
    if (!s.specials.empty()) p["specials"] = s.specials;
    if (s.param_role != ParamRole::None) p["role"] = param_role_name(s.param_role);
    if (s.fraction) p["fraction"] = true;
    if (s.type == ParamType::IntList || s.type == ParamType::FloatList) {
      p["min_length"] = s.min_len;
      if (s.max_len != static_cast<std::size_t>(-1)) p["max_length"] = s.max_len;
    }
    if (s.type == ParamType::Component || s.type == ParamType::ComponentList) p["kind"] = s.kind;
    p["schedulable"] = s.is_numeric() && s.schedulable;
    p["doc"] = s.doc_text;
    arr.push_back(std::move(p));
  }
  return arr;
}

}  // namespace yoloflow
