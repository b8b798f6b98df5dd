#include "runtime/plugin/describe.h"

#include <sstream>

namespace yoloflow::core {
namespace {

std::string default_text(const ParamSpec& p) {
  if (p.is_required) return "required";
  if (p.default_json.is_null()) return "none";
  return p.default_json.dump();
}

std::string ports_text(const std::vector<PortSpec>& ports) {
  std::string out;
  for (std::size_t i = 0; i < ports.size(); ++i) {
    out += (i ? ", " : "") + ports[i].name + " (" + ports[i].type + ")";
  }
  return out.empty() ? "none" : out;
}

}  // namespace

std::string describe_text(const RegisteredComponent& rc) {
  std::ostringstream os;
  const auto& info = rc.info;
  os << info.name << " (" << kind_name(info.kind) << ", plugin " << rc.plugin << " "
     << rc.plugin_version << ")\n";
  if (!info.summary.empty()) os << "  " << info.summary << "\n";
  os << "  file:    " << rc.file << "\n";
  if (!info.inputs.empty() || !info.outputs.empty()) {
    os << "  inputs:  " << ports_text(info.inputs) << "\n";
    os << "  outputs: " << ports_text(info.outputs) << "\n";
  }
  os << "\nParameters:\n";
  if (info.schema.params().empty()) os << "  (none)\n";
  for (const auto& p : info.schema.params()) {
    os << "  " << p.name << ": " << p.describe_type() << ", default " << default_text(p);
    if (p.is_numeric() && p.schedulable) os << ", schedulable";
    os << "\n";
    if (!p.doc_text.empty()) os << "      " << p.doc_text << "\n";
  }
  return os.str();
}

json describe_json(const RegisteredComponent& rc) {
  json j;
  j["name"] = rc.info.name;
  j["kind"] = kind_name(rc.info.kind);
  j["summary"] = rc.info.summary;
  j["plugin"] = rc.plugin;
  j["version"] = rc.plugin_version;
  j["file"] = rc.file;
  auto ports = [](const std::vector<PortSpec>& v) {
    json a = json::array();
    for (const auto& p : v) a.push_back({{"name", p.name}, {"type", p.type}});
    return a;
  };
  j["inputs"] = ports(rc.info.inputs);
  j["outputs"] = ports(rc.info.outputs);
  j["params"] = rc.info.schema.to_json();
  return j;
}

std::string describe_markdown(const RegisteredComponent& rc) {
  std::ostringstream os;
  const auto& info = rc.info;
  os << "## `" << info.name << "` (" << kind_name(info.kind) << ")\n\n";
  if (!info.summary.empty()) os << info.summary << "\n\n";
  os << "Plugin `" << rc.plugin << "` " << rc.plugin_version << ".";
  if (!info.inputs.empty() || !info.outputs.empty()) {
    os << " Inputs: " << ports_text(info.inputs) << ". Outputs: " << ports_text(info.outputs)
       << ".";
  }
  os << "\n\n";
  if (info.schema.params().empty()) {
    os << "No parameters.\n\n";
    return os.str();
  }
  os << "| parameter | accepts | default | description |\n|---|---|---|---|\n";
  for (const auto& p : info.schema.params()) {
    std::string doc = p.doc_text;
    for (auto& c : doc) {
      if (c == '|') c = '/';
    }
    std::string accepts = p.describe_type();
    if (p.is_numeric() && p.schedulable) accepts += "; schedulable";
    os << "| `" << p.name << "` | " << accepts << " | `" << default_text(p) << "` | " << doc
       << " |\n";
  }
  os << "\n";
  return os.str();
}

}  // namespace yoloflow::core
