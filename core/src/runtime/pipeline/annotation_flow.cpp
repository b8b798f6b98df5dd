#include "runtime/pipeline/annotation_flow.h"

#include <algorithm>
#include <map>
#include <utility>

#include "runtime/pipeline/component_spec.h"
#include "runtime/plugin/stage_flow.h"

namespace yoloflow::core {
namespace {

// Something that needs fields: a stage, or a component a stage's parameters name.
struct Consumer {
  std::string text;  // "loss 'pose' (stages.train.params.loss)"
  Fields needs;
};

// A component parameter's value: as written, else its schema's default (made when the stage runs).
const json* component_value(const ParamSpec& spec, const json& params, bool& given) {
  given = params.is_object() && params.contains(spec.name) && !params[spec.name].is_null();
  return given ? &params[spec.name] : &spec.default_json;
}

// The components `schema`'s Component parameters name in `params` (at `path`), and theirs, with
// what each needs. A default may name a component whose default names another: bounded.
void nested_consumers(const Schema& schema, const json& params, const std::string& path, const Registry& registry,
                      int depth, bool validation, std::vector<Consumer>& out) {
  constexpr int kMaxDepth = 8;
  if (depth >= kMaxDepth) return;
  for (const auto& spec : schema.params()) {
    if (spec.type != ParamType::Component && spec.type != ParamType::ComponentList) continue;
    Kind kind;
    if (!kind_from_name(spec.kind, kind)) continue;
    // An evaluator reads the validation chain only; the validation chain's own stages are no
    // consumers of either.
    if (kind == Kind::Evaluator && !validation) continue;
    if (spec.param_role == ParamRole::ValidationSource || spec.param_role == ParamRole::ValidationTransform ||
        spec.param_role == ParamRole::ValidationBatcher) {
      continue;
    }
    bool given = false;
    const json& value = *component_value(spec, params, given);
    auto visit = [&](const json& c, const std::string& at) {
      if (!c.is_object() || !c.contains("plugin") || !c["plugin"].is_string()) return;
      const RegisteredComponent* rc = registry.find(kind, c["plugin"].get<std::string>());
      if (rc == nullptr) return;
      const Fields needs = annotation_contract(rc->info).needs;
      if (!needs.empty()) {
        out.push_back({component_label(kind, rc->info.name) + " (" + at + (given ? "" : ", by default") + ")", needs});
      }
      const json none = json::object();
      nested_consumers(rc->info.schema, c.contains("params") ? c["params"] : none, at + ".params", registry, depth + 1,
                       validation, out);
    };
    const std::string at = path + "." + spec.name;
    if (spec.type == ParamType::Component) {
      visit(value, at);
    } else if (value.is_array()) {
      for (std::size_t i = 0; i < value.size(); ++i) visit(value[i], at + "." + std::to_string(i));
    }
  }
}

// "loss 'a' (p) needs", "loss 'a' (p) and sink 'b' (q) need".
std::string who_needs(const std::vector<std::string>& consumers) {
  std::string text;
  for (std::size_t i = 0; i < consumers.size(); ++i) {
    text += (i == 0 ? "" : i + 1 == consumers.size() ? " and " : ", ") + consumers[i];
  }
  return text + (consumers.size() == 1 ? " needs" : " need");
}

// " (it declares no fields: a batcher keeps boxes by default)" for a component that declares none.
std::string undeclared(const ComponentInfo& info, const char* word, Fields fields) {
  if (info.contract.declared) return {};
  return std::string(" (it declares no fields: ") + (info.kind == Kind::Augmentation ? "an " : "a ") +
         kind_name(info.kind) + " " + word + " " + fields.names() + " by default)";
}

}  // namespace

std::vector<TopologyStage> validation_chain(const TopologyStage& sink, const Registry& registry,
                                            std::vector<json>& storage) {
  const Schema& schema = sink.info->schema;
  const ParamRole roles[] = {ParamRole::ValidationSource, ParamRole::ValidationTransform, ParamRole::ValidationBatcher};
  const Kind kinds[] = {Kind::Source, Kind::Augmentation, Kind::Batcher};
  const json none = json::object();
  const json& params = sink.node != nullptr && sink.node->contains("params") ? (*sink.node)["params"] : none;
  storage.clear();
  storage.reserve(3);  // the chain points into it
  std::vector<TopologyStage> chain;
  for (int i = 0; i < 3; ++i) {
    const ParamSpec* spec = schema.find_role(roles[i]);
    if (spec == nullptr) return {};
    bool given = false;
    const json& value = *component_value(*spec, params, given);
    if (!value.is_object() || !value.contains("plugin") || !value["plugin"].is_string()) return {};
    const RegisteredComponent* rc = registry.find(kinds[i], value["plugin"].get<std::string>());
    if (rc == nullptr) return {};
    storage.push_back(value);
    chain.push_back({sink.name + ".params." + spec->name, &storage.back(), &rc->info});
  }
  chain.push_back(sink);
  return chain;
}

void check_annotation_flow(const std::vector<TopologyStage>& chain, const Registry& registry, Diagnostics& out,
                           bool validation) {
  const std::size_t n = chain.size();
  if (n < 3) return;  // not a chain the runner executes: the topology check said so
  std::vector<AnnotationContract> contract(n);
  for (std::size_t i = 0; i < n; ++i) contract[i] = annotation_contract(*chain[i].info);
  // What reaches stage i; the source reads nothing.
  std::vector<Fields> reaching(n);
  Fields fields = contract[0].gives;
  for (std::size_t i = 1; i < n; ++i) {
    reaching[i] = fields;
    fields = (fields & contract[i].keeps) | contract[i].gives;
  }

  // (stage that loses it, field) -> who needs it; ordered by stage, then field.
  std::map<std::pair<std::size_t, std::uint32_t>, std::vector<std::string>> lost;
  auto add = [&](std::size_t stage, Field f, const std::string& consumer) {
    auto& list = lost[{stage, static_cast<std::uint32_t>(f)}];
    if (std::find(list.begin(), list.end(), consumer) == list.end()) list.push_back(consumer);
  };
  for (std::size_t i = 1; i < n; ++i) {
    const TopologyStage& stage = chain[i];
    const std::string path = "stages." + stage.name;
    std::vector<Consumer> consumers;
    if (!contract[i].needs.empty() && !validation) {
      consumers.push_back({component_label(stage.info->kind, stage.info->name) + " (" + path + ")", contract[i].needs});
    }
    const json none = json::object();
    const json& params = stage.node != nullptr && stage.node->contains("params") ? (*stage.node)["params"] : none;
    // On a validation chain only the sink's components consume it (the chain's own stages are
    // the sink's parameters too).
    if (!validation || i + 1 == n) nested_consumers(stage.info->schema, params, path + ".params", registry, 0, validation, consumers);
    for (const Consumer& c : consumers) {
      for (Field f : all_fields()) {
        if (!c.needs.has(f) || reaching[i].has(f)) continue;
        // The last stage before this one that gives it; each stage after that one that does not
        // carry it on loses it (all of them: removing one leaves the others).
        std::size_t giver = 0;
        bool given = contract[0].gives.has(f);
        for (std::size_t j = 1; j < i; ++j) {
          if (contract[j].gives.has(f)) {
            giver = j;
            given = true;
          }
        }
        if (!given) add(0, f, c.text);
        for (std::size_t j = giver + 1; j < i; ++j) {
          if (!contract[j].keeps.has(f)) add(j, f, c.text);
        }
      }
    }
  }

  for (const auto& [key, consumers] : lost) {
    const std::size_t j = key.first;
    const Field f = static_cast<Field>(key.second);
    const std::string field = field_name(f);
    const ComponentInfo& info = *chain[j].info;
    const std::string label = component_label(info.kind, info.name);
    std::string message;
    if (j == 0) {
      message = label + " gives " + contract[0].gives.names() + undeclared(info, "gives", contract[0].gives) +
                ", not " + field + ", which " + who_needs(consumers) + "; use a source that gives " + field;
    } else if (info.kind == Kind::Batcher) {
      message = label + " packs " + contract[j].keeps.names() + undeclared(info, "keeps", contract[j].keeps) +
                ", not " + field + ", which " + who_needs(consumers) + "; use a batcher that keeps " + field;
    } else {
      message = label + " drops " + field + undeclared(info, "keeps", contract[j].keeps) + ", which " +
                who_needs(consumers) + "; use a stage that keeps " + field + " or remove this one";
    }
    out.push_back({"stages." + chain[j].name + ".plugin", message});
  }
}

}  // namespace yoloflow::core
