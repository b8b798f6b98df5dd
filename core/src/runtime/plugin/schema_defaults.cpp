#include "runtime/plugin/schema_defaults.h"

#include <map>

namespace yoloflow::core {
namespace {

// A default as JSON, shortened for one line.
std::string default_text(const json& value) {
  std::string s = value.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

}  // namespace

std::vector<std::string> default_problems(const ComponentInfo& info) {
  const std::string owner = std::string(kind_name(info.kind)) + " '" + info.name + "'";
  // The defaults as a pipeline leaving every parameter out would resolve them; a parameter
  // without default is absent, as it would be there.
  json defaults = json::object();
  for (const auto& spec : info.schema.params()) {
    if (!spec.default_json.is_null()) defaults[spec.name] = spec.default_json;
  }
  Diagnostics found;
  info.schema.validate(defaults, "", found, nullptr, owner);
  std::vector<std::string> out;
  for (const auto& d : found) {
    // Paths are ".name", ".name[2]" or ".name.steps.0": the parameter is the first part.
    const std::string path = d.path.empty() || d.path[0] != '.' ? d.path : d.path.substr(1);
    const std::string name = path.substr(0, path.find_first_of(".["));
    const ParamSpec* spec = info.schema.find(name);
    if (spec == nullptr || spec->default_json.is_null()) continue;  // a required parameter: no default to check
    std::string line = owner + " declares parameter '" + name + "' with default " + spec->default_json.dump() +
                       ", which its own schema refuses: ";
    if (path != name) line += path + ": ";
    out.push_back(line + d.message);
  }
  // Roles (ParamRole): the host looks each one up once, and writes a value of one type into it.
  std::map<ParamRole, std::string> holder;
  for (const auto& spec : info.schema.params()) {
    const ParamRole role = spec.param_role;
    if (role == ParamRole::None) continue;
    const std::string said = owner + " declares parameter '" + spec.name + "' as its " + param_role_name(role);
    const auto [it, first] = holder.emplace(role, spec.name);
    if (!first) out.push_back(said + ", which parameter '" + it->second + "' is already");
    const bool text = spec.type == ParamType::String || spec.type == ParamType::Path || spec.type == ParamType::Enum;
    if (role == ParamRole::ValidationSource || role == ParamRole::ValidationTransform ||
        role == ParamRole::ValidationBatcher) {
      const char* kind = role == ParamRole::ValidationSource      ? "source"
                         : role == ParamRole::ValidationTransform ? "augmentation"
                                                                  : "batcher";
      if (spec.type != ParamType::Component || spec.kind != kind) {
        out.push_back(said + ", which must be a component of kind " + kind);
      }
    } else if (!text) {
      out.push_back(said + ", which must be a string, path or enum parameter, not " + param_type_name(spec.type));
    }
  }
  return out;
}

}  // namespace yoloflow::core
