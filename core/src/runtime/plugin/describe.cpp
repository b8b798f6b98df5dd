#include "runtime/plugin/describe.h"

#include <sstream>

#include "runtime/plugin/stage_flow.h"

namespace yoloflow::core {
namespace {

std::string default_text(const ParamSpec& p) {
  if (p.is_required) return "required";
  if (p.default_json.is_null()) return "none";
  return p.default_json.dump();
}

std::string flow_text(const char* what) { return what ? what : "nothing"; }

}  // namespace

std::string describe_text(const RegisteredComponent& rc) {
  std::ostringstream os;
  const auto& info = rc.info;
  os << info.name << " (" << kind_name(info.kind) << ", plugin " << rc.plugin << " "
     << rc.plugin_version << ")\n";
  if (!info.summary.empty()) os << "  " << info.summary << "\n";
  os << "  file:    " << rc.file << "\n";
  const StageFlow flow = stage_flow(info.kind);
  if (flow.reads || flow.gives) {
    os << "  reads:   " << flow_text(flow.reads) << " (from the stage its \"input\" names)\n";
    os << "  gives:   " << flow_text(flow.gives) << "\n";
  }
  if (const std::string fields = annotation_contract_text(info); !fields.empty()) {
    os << "  fields:  " << fields << "\n";
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
  const StageFlow flow = stage_flow(rc.info.kind);
  j["reads"] = flow.reads ? json(flow.reads) : json(nullptr);
  j["gives"] = flow.gives ? json(flow.gives) : json(nullptr);
  // The annotation fields, for the kinds that have a contract: a name list per word.
  if (!annotation_contract_text(rc.info).empty()) {
    const AnnotationContract c = annotation_contract(rc.info);
    auto names = [](Fields fields) {
      json list = json::array();
      for (Field f : all_fields()) {
        if (fields.has(f)) list.push_back(field_name(f));
      }
      return list;
    };
    j["fields"] = {{"gives", names(c.gives)},
                   {"keeps", names(c.keeps)},
                   {"needs", names(c.needs)},
                   {"declared", rc.info.contract.declared}};
  }
  j["params"] = rc.info.schema.to_json();
  return j;
}

std::string describe_markdown(const RegisteredComponent& rc) {
  std::ostringstream os;
  const auto& info = rc.info;
  os << "## `" << info.name << "` (" << kind_name(info.kind) << ")\n\n";
  if (!info.summary.empty()) os << info.summary << "\n\n";
  os << "Plugin `" << rc.plugin << "` " << rc.plugin_version << ".";
  const StageFlow flow = stage_flow(info.kind);
  if (flow.reads || flow.gives) os << " Reads " << flow_text(flow.reads) << ", gives " << flow_text(flow.gives) << ".";
  if (const std::string fields = annotation_contract_text(info); !fields.empty()) {
    os << " Annotation fields: " << fields << ".";
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
