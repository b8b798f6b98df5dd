// Parameters checked against a schema: every problem at once, each with its JSON path, unknown
// names with the closest known one.
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

namespace {

void check_list(const json& v, const ParamSpec& spec, const std::string& path, Diagnostics& out) {
  if (!v.is_array()) {
    out.push_back({path, "expected " + spec.describe_type() + ", got " + json_kind(v)});
    return;
  }
  if (v.size() < spec.min_len || v.size() > spec.max_len) {
    out.push_back({path, "has " + std::to_string(v.size()) + " elements: expected " +
                             spec.describe_type()});
  }
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto& e = v[i];
    const std::string ep = path + "[" + std::to_string(i) + "]";
    const bool ok = spec.type == ParamType::IntList ? is_integral_number(e)
                                                    : (e.is_number() && !e.is_boolean());
    if (!ok) {
      out.push_back({ep, "expected " + std::string(spec.type == ParamType::IntList ? "an int" : "a float") +
                             ", got " + json_kind(e)});
      continue;
    }
    check_range(e.get<double>(), spec, ep, out);
  }
}

void check_value(const json& v, const ParamSpec& spec, const std::string& path, Diagnostics& out,
                 const ComponentValidator* components) {
  if (v.is_null()) {
    if (spec.is_required) {
      out.push_back({path, "is required: expected " + spec.describe_type()});
    } else if (!spec.default_json.is_null()) {
      out.push_back({path, "may not be null: expected " + spec.describe_type() +
                               " (leave it out for the default " + value_text(spec.default_json) +
                               ")"});
    }
    return;
  }
  switch (spec.type) {
    case ParamType::Bool:
      if (v.is_string() && std::find(spec.specials.begin(), spec.specials.end(), v.get<std::string>()) != spec.specials.end()) {
        break;  // a word the parameter also takes ("auto")
      }
      if (!v.is_boolean()) {
        out.push_back({path, "expected " + spec.describe_type() + " (true or false), got " + json_kind(v) + " (" +
                                 value_text(v) + ")"});
      }
      break;
    case ParamType::Int:
    case ParamType::Float:
      if (is_schedule(v)) {
        if (!spec.schedulable) {
          out.push_back({path, "cannot follow a schedule: expected " + spec.describe_type()});
        } else {
          validate_schedule(v, spec, path, out);
        }
      } else {
        check_number(v, spec, path, out);
      }
      break;
    case ParamType::String:
    case ParamType::Path:
      if (!v.is_string()) {
        out.push_back({path, "expected " + std::string(param_type_name(spec.type)) + ", got " +
                                 json_kind(v) + " (" + value_text(v) + ")"});
      } else if (spec.type == ParamType::Path && v.get<std::string>().empty()) {
        out.push_back({path, "is an empty path"});
      }
      break;
    case ParamType::Enum: {
      if (!v.is_string()) {
        out.push_back({path, "expected " + spec.describe_type() + ", got " + json_kind(v)});
        break;
      }
      const auto s = v.get<std::string>();
      if (std::find(spec.enum_choices.begin(), spec.enum_choices.end(), s) ==
          spec.enum_choices.end()) {
        std::string msg = "\"" + s + "\" is not allowed: expected " + spec.describe_type();
        const auto guess = closest_name(s, spec.enum_choices);
        if (!guess.empty()) msg += "; did you mean \"" + guess + "\"?";
        out.push_back({path, msg});
      }
      break;
    }
    case ParamType::IntList:
    case ParamType::FloatList:
      check_list(v, spec, path, out);
      break;
    case ParamType::Json:
      break;
    case ParamType::Component:
      if (!v.is_object()) {
        out.push_back({path, "expected a component object {\"plugin\": NAME, \"params\": {...}} of kind " +
                                 spec.kind + ", got " + json_kind(v)});
      } else if (components) {
        components->validate_component(v, spec.kind, path, out);
      }
      break;
    case ParamType::ComponentList:
      if (!v.is_array()) {
        out.push_back({path, "expected a list of component objects [{\"plugin\": NAME, \"params\": {...}}, ...] of kind " +
                                 spec.kind + ", got " + json_kind(v)});
        break;
      }
      for (std::size_t i = 0; i < v.size(); ++i) {
        const std::string item = path + "." + std::to_string(i);
        if (!v[i].is_object()) {
          out.push_back({item, "expected a component object {\"plugin\": NAME, \"params\": {...}} of kind " +
                                   spec.kind + ", got " + json_kind(v[i])});
        } else if (components) {
          components->validate_component(v[i], spec.kind, item, out);
        }
      }
      break;
  }
}

}  // namespace

void Schema::validate(const json& params, const std::string& path, Diagnostics& out,
                      const ComponentValidator* components, const std::string& owner) const {
  if (params.is_null()) {
    validate(json::object(), path, out, components, owner);
    return;
  }
  if (!params.is_object()) {
    out.push_back({path, "expected an object of parameters, got " + json_kind(params)});
    return;
  }
  const auto known = names();
  for (auto it = params.begin(); it != params.end(); ++it) {
    if (!it.key().empty() && it.key()[0] == '_') continue;  // "_doc" and other comments
    if (auto moved = moved_.find(it.key()); moved != moved_.end()) {
      out.push_back({path + "." + it.key(), "'" + it.key() + "' is no longer a parameter" +
                                                (owner.empty() ? std::string() : " of " + owner) +
                                                ": it moved to " + path + "." + moved->second});
      continue;
    }
    if (find(it.key()) == nullptr) {
      std::string msg = "unknown parameter '" + it.key() + "'";
      if (!owner.empty()) msg += " of " + owner;
      const auto guess = closest_name(it.key(), known);
      if (!guess.empty()) {
        msg += "; did you mean '" + guess + "'?";
      } else if (known.empty()) {
        msg += "; it takes no parameters";
      } else {
        msg += "; known: " + [&] {
          std::string all;
          for (std::size_t i = 0; i < known.size(); ++i) all += (i ? ", " : "") + known[i];
          return all;
        }();
      }
      out.push_back({path + "." + it.key(), msg});
    }
  }
  for (const auto& spec : params_) {
    const std::string p = path + "." + spec.name;
    auto it = params.find(spec.name);
    if (it == params.end()) {
      if (spec.is_required) {
        out.push_back({p, "is required" + (owner.empty() ? std::string() : " by " + owner) +
                              ": expected " + spec.describe_type() +
                              (spec.doc_text.empty() ? "" : " (" + spec.doc_text + ")")});
      }
      continue;
    }
    check_value(*it, spec, p, out, components);
  }
}

}  // namespace yoloflow
