#include "yoloflow/params.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>

#include "yoloflow/error.h"

namespace yoloflow {

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

namespace {

std::string number_text(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

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

// ---------------------------------------------------------------- Schema

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

std::vector<std::string> Schema::names() const {
  std::vector<std::string> out;
  for (const auto& p : params_) out.push_back(p.name);
  return out;
}

namespace {

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

// A single (non-schedule) value of a numeric parameter.
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

// ---------------------------------------------------------------- schedules

bool is_schedule(const json& value) {
  return value.is_object() && value.size() == 1 &&
         (value.contains("steps") || value.contains("linear"));
}

namespace {

bool parse_epoch_key(const std::string& key, long& out) {
  if (key.empty()) return false;
  std::size_t pos = 0;
  try {
    out = std::stol(key, &pos);
  } catch (...) {
    return false;
  }
  return pos == key.size();
}

}  // namespace

void validate_schedule(const json& value, const ParamSpec& spec, const std::string& path,
                       Diagnostics& out) {
  const std::string mode = value.contains("steps") ? "steps" : "linear";
  const json& points = value[mode];
  const std::string p = path + "." + mode;
  if (!points.is_object() || points.empty()) {
    out.push_back({p, "expected an object mapping epochs to values, e.g. {\"0\": 1.0, \"-10\": 0.0}"});
    return;
  }
  for (auto it = points.begin(); it != points.end(); ++it) {
    long epoch = 0;
    if (!parse_epoch_key(it.key(), epoch)) {
      out.push_back({p + "." + it.key(), "'" + it.key() +
                                             "' is not an epoch: keys are integers (negative "
                                             "counts from the end)"});
      continue;
    }
    // A schedule holds plain numbers: "auto" and fractions are resolved once, before the run.
    ParamSpec plain = spec;
    plain.specials.clear();
    plain.fraction = false;
    if (it->is_string() || is_schedule(*it)) {
      std::string not_here;
      for (const auto& special : spec.specials) not_here += (not_here.empty() ? "" : ", ") + ("\"" + special + "\"");
      if (spec.fraction) not_here += not_here.empty() ? "a fraction" : " or a fraction";
      out.push_back({p + "." + it.key(), "expected " + plain.describe_type() + ": a schedule takes plain values" +
                                             (not_here.empty() ? std::string() : " (not " + not_here + ")")});
      continue;
    }
    check_number(*it, plain, p + "." + it.key(), out);
  }
}

json evaluate_schedule(const json& value, const ParamSpec& spec, int epoch, int epochs) {
  const bool linear = value.contains("linear");
  const json& points = value[linear ? "linear" : "steps"];
  std::vector<std::pair<long, double>> pts;
  for (auto it = points.begin(); it != points.end(); ++it) {
    long e = 0;
    if (!parse_epoch_key(it.key(), e)) continue;
    if (e < 0) e = std::max<long>(0, epochs + e);
    pts.emplace_back(e, it->get<double>());
  }
  std::stable_sort(pts.begin(), pts.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  double v = pts.front().second;
  if (!linear) {
    for (const auto& [e, val] : pts) {
      if (e <= epoch) v = val;
    }
  } else if (epoch >= pts.back().first) {
    v = pts.back().second;
  } else {
    for (std::size_t i = 0; i + 1 < pts.size(); ++i) {
      if (epoch >= pts[i].first && epoch < pts[i + 1].first) {
        const double t = static_cast<double>(epoch - pts[i].first) /
                         static_cast<double>(pts[i + 1].first - pts[i].first);
        v = pts[i].second + t * (pts[i + 1].second - pts[i].second);
      }
    }
  }
  if (spec.type == ParamType::Int) return static_cast<std::int64_t>(std::llround(v));
  return v;
}

// ---------------------------------------------------------------- Params

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

// ---------------------------------------------------------------- did you mean

namespace {
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t sub = prev[j - 1] + (std::tolower(a[i - 1]) == std::tolower(b[j - 1]) ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
}  // namespace

std::string closest_name(const std::string& name, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = std::numeric_limits<std::size_t>::max();
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(name, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  if (best.empty()) return best;
  const std::size_t limit = std::max<std::size_t>(2, (std::max(name.size(), best.size()) + 2) / 3);
  const bool prefix = !name.empty() && (best.rfind(name, 0) == 0 || name.rfind(best, 0) == 0);
  return (best_d <= limit || prefix) ? best : std::string();
}

}  // namespace yoloflow
