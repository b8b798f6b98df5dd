// Every check of a pipeline document, then its resolution (see pipeline_validation.h).
#include "runtime/pipeline/pipeline_validation.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>

#include "runtime/pipeline/annotation_flow.h"
#include "runtime/pipeline/component_spec.h"
#include "runtime/pipeline/device_word.h"
#include "runtime/pipeline/json_text.h"
#include "runtime/pipeline/pipeline_datasets.h"
#include "runtime/pipeline/pipeline_resolution.h"
#include "runtime/pipeline/topology.h"
#include "yoloflow/log.h"

namespace fs = std::filesystem;

namespace yoloflow::core {
namespace {

bool is_comment(const std::string& key) { return !key.empty() && key[0] == '_'; }

// Schema::validate names paths relative to its argument; at the top level that is "".
void strip_leading_dot(Diagnostics& d, std::size_t from) {
  for (std::size_t i = from; i < d.size(); ++i) {
    if (!d[i].path.empty() && d[i].path[0] == '.') d[i].path.erase(0, 1);
  }
}

std::string did_you_mean(const std::string& name, const std::vector<std::string>& candidates) {
  const auto guess = closest_name(name, candidates);
  return guess.empty() ? std::string() : "; did you mean '" + guess + "'?";
}

void validate_stage_keys(const std::string& name, const json& stage, Diagnostics& out) {
  static const std::vector<std::string> keys = {"plugin", "kind", "params", "input"};
  for (auto it = stage.begin(); it != stage.end(); ++it) {
    if (is_comment(it.key())) continue;
    if (std::find(keys.begin(), keys.end(), it.key()) == keys.end()) {
      out.push_back({"stages." + name + "." + it.key(),
                     "unknown key '" + it.key() + "' of a stage" + did_you_mean(it.key(), keys) +
                         " (a stage has plugin, kind, params and input)"});
    }
  }
}

// Each plugin_path entry a non-empty path to something that exists. They are loaded before the
// stages are checked (as --plugin-path): a path that names nothing would leave its components
// "unknown" with no word of why.
void check_plugin_path(const json& list, const std::string& base_dir, Diagnostics& out) {
  if (!list.is_array()) {
    out.push_back({"plugin_path", "expected a list of paths, e.g. [\"plugins/build\"], got " + std::string(list.type_name())});
    return;
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string where = "plugin_path[" + std::to_string(i) + "]";
    if (!list[i].is_string() || list[i].get<std::string>().empty()) {
      out.push_back({where, "expected a non-empty path (a string)"});
      continue;
    }
    const fs::path given(list[i].get<std::string>());
    const fs::path path = (given.is_absolute() ? given : fs::path(base_dir) / given).lexically_normal();
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      out.push_back({where, given.string() + " does not exist (looked for " + path.string() +
                                "): a plugin_path entry is a folder of plugin libraries or one library"});
    } else if (!fs::is_directory(path, ec) && !fs::is_regular_file(path, ec)) {
      out.push_back({where, path.string() + " is neither a folder nor a file: a plugin_path entry is a folder "
                                            "of plugin libraries or one library"});
    }
  }
}

// The top-level settings: the schema's checks, the device, the plugin folders; and, when they
// are all valid, the image size rounded up to a multiple of YOLO's largest stride (32) with a
// warning, as Ultralytics' check_imgsz does, rather than failing inside the network.
void check_settings(json& doc, const std::string& base_dir, LoadedPipeline& result) {
  Diagnostics& out = result.diagnostics;
  const std::size_t before = out.size();
  pipeline_schema().validate(doc, "", out, nullptr, "the pipeline");
  strip_leading_dot(out, before);
  if (doc.contains("device") && doc["device"].is_string()) {
    std::string device;
    if (const std::string given = doc["device"].get<std::string>(); !read_device_word(given, device)) {
      out.push_back({"device", device_refusal("", given)});
    }
  }
  if (doc.contains("plugin_path")) check_plugin_path(doc["plugin_path"], base_dir, out);
  if (out.size() == before && doc.contains("imgsz") && doc["imgsz"].is_number_integer()) {
    constexpr int kStride = 32;
    const int imgsz = doc["imgsz"].get<int>();
    if (imgsz % kStride != 0) {
      const int rounded = (imgsz + kStride - 1) / kStride * kStride;
      doc["imgsz"] = rounded;
      result.warnings.push_back({"imgsz", std::to_string(imgsz) + " is not a multiple of the largest stride " +
                                              std::to_string(kStride) + ": using " + std::to_string(rounded)});
      YF_LOG_WARN("imgsz " << imgsz << " is not a multiple of the largest stride " << kStride << ": using " << rounded);
    }
  }
}

// One stage: its keys, its plugin found and its parameters validated. None for a stage that
// cannot be one (a name with '.', not an object); a draft without a component when its plugin
// is missing or unknown.
std::optional<StageDraft> check_stage(const std::string& name, const json& stage, const std::string& base_dir,
                                      const Registry& registry, const RegistryComponentValidator& validator,
                                      Diagnostics& out) {
  const std::string path = "stages." + name;
  if (name.find('.') != std::string::npos) {
    out.push_back({path, "a stage name may not contain '.' (edges name ports as node.port)"});
    return std::nullopt;
  }
  if (!stage.is_object()) {
    out.push_back({path, "a stage must be an object with \"plugin\", got " + std::string(stage.type_name())});
    return std::nullopt;
  }
  validate_stage_keys(name, stage, out);
  StageDraft draft;
  draft.name = name;
  draft.node = &stage;
  auto pit = stage.find("plugin");
  if (pit == stage.end() || !pit->is_string()) {
    out.push_back({path + ".plugin", pit == stage.end() ? "is required: the name of a source, augmentation, "
                                                          "batcher or sink plugin"
                                                        : "must be a string (a plugin name)"});
    return draft;
  }
  std::string kind_text;
  if (auto kit = stage.find("kind"); kit != stage.end()) {
    if (kit->is_string()) {
      kind_text = kit->get<std::string>();
    } else {
      out.push_back({path + ".kind", "must be a string: source, augmentation, batcher or sink"});
    }
  }
  draft.rc = find_stage_component(registry, pit->get<std::string>(), kind_text, path, out);
  if (!draft.rc) return draft;
  json params = json::object();
  if (auto prm = stage.find("params"); prm != stage.end()) {
    if (!prm->is_object()) {
      out.push_back({path + ".params", "must be an object of parameters"});
      return draft;
    }
    params = *prm;
  }
  const std::size_t before_stage = out.size();
  draft.rc->info.schema.validate(params, path + ".params", out, &validator,
                                 component_label(draft.rc->info.kind, draft.rc->info.name));
  validator.validate_defaults(draft.rc->info.schema, params, path + ".params", out);
  // What a built-in stage refuses beyond its schema, as its configure() would (ParamsCheck).
  if (out.size() == before_stage && draft.rc->check != nullptr) {
    draft.rc->check(resolve_params(draft.rc->info.schema, params, base_dir, registry), path + ".params", registry, out);
  }
  return draft;
}

// Stages: find each plugin and validate its parameters.
std::vector<StageDraft> check_stages(const json& doc, const std::string& base_dir, const Registry& registry,
                                     const RegistryComponentValidator& validator, Diagnostics& out) {
  std::vector<StageDraft> drafts;
  auto sit = doc.find("stages");
  if (sit != doc.end() && !sit->is_null()) {
    if (!sit->is_object()) {
      out.push_back({"stages", "must be an object mapping stage names to stages"});
    } else if (sit->empty()) {
      out.push_back({"stages", "is empty: a pipeline needs at least a source, a batcher and a sink"});
    }
  }
  if (sit == doc.end() || !sit->is_object()) return drafts;
  for (auto it = sit->begin(); it != sit->end(); ++it) {
    if (is_comment(it.key())) continue;
    if (auto draft = check_stage(it.key(), *it, base_dir, registry, validator, out)) drafts.push_back(std::move(*draft));
  }
  return drafts;
}

std::vector<MonitorSpec> check_monitors(const json& doc, const Registry& registry,
                                        const RegistryComponentValidator& validator, Diagnostics& out) {
  std::vector<MonitorSpec> monitors;
  auto mit = doc.find("monitors");
  if (mit == doc.end() || mit->is_null()) return monitors;
  if (!mit->is_array()) {
    out.push_back({"monitors", "must be a list of {\"plugin\": NAME, \"params\": {...}}"});
    return monitors;
  }
  for (std::size_t i = 0; i < mit->size(); ++i) {
    const std::string path = "monitors[" + std::to_string(i) + "]";
    const json& m = (*mit)[i];
    if (!m.is_object()) {
      out.push_back({path, "must be an object {\"plugin\": NAME, \"params\": {...}}"});
      continue;
    }
    const std::size_t n = out.size();
    validator.validate_component(m, "monitor", path, out);
    if (out.size() != n) continue;
    MonitorSpec spec;
    spec.plugin = m["plugin"].get<std::string>();
    spec.path = path;
    spec.component = registry.find(Kind::Monitor, spec.plugin);
    spec.params = m.contains("params") ? m["params"] : json::object();
    monitors.push_back(std::move(spec));
  }
  return monitors;
}

// Ports and edges, only between stages whose plugin was found; then the annotation fields along
// the chain, once there is one: a field the loss needs that a stage drops would otherwise
// surface as a failed step, or as a model trained without it.
Topology check_graph(const std::vector<StageDraft>& drafts, const Registry& registry, Diagnostics& out) {
  std::vector<TopologyStage> topo;
  for (const auto& d : drafts) {
    if (d.rc) topo.push_back({d.name, d.node, &d.rc->info});
  }
  std::set<std::string> all_names;
  for (const auto& d : drafts) all_names.insert(d.name);
  Topology topology = check_topology(topo, all_names, out);
  if (topology.source.empty()) return topology;
  std::vector<std::string> names = {topology.source};
  names.insert(names.end(), topology.augmentations.begin(), topology.augmentations.end());
  names.push_back(topology.batcher);
  names.push_back(topology.sink);
  std::vector<TopologyStage> chain;
  for (const auto& name : names) {
    chain.push_back(*std::find_if(topo.begin(), topo.end(), [&](const TopologyStage& s) { return s.name == name; }));
  }
  check_annotation_flow(chain, registry, out);
  // The sink's validation chain (a train sink's val_source, val_transform, val_batcher), for
  // what its loss and evaluator need: found before an epoch of training, not after it.
  std::vector<json> defaults;
  const auto validation = validation_chain(chain.back(), registry, defaults);
  if (!validation.empty()) check_annotation_flow(validation, registry, out, /*validation=*/true);
  return topology;
}

}  // namespace

bool read_pipeline_document(const std::string& text, json& document, Diagnostics& out) {
  if (!parse_json_text(text, document, out)) return false;
  if (!document.is_object()) {
    out.push_back({"", "a pipeline is a JSON object ({\"stages\": {...}, ...}), not " +
                           std::string(document.type_name())});
    return false;
  }
  return true;
}

void validate_pipeline(json& doc, const std::string& base_dir, const Registry& registry, const std::string& file,
                       LoadedPipeline& result) {
  Diagnostics& out = result.diagnostics;
  share_dataset(doc, base_dir, registry, out);
  share_validation_source(doc, registry);
  check_settings(doc, base_dir, result);
  RegistryComponentValidator validator(registry);
  const std::vector<StageDraft> drafts = check_stages(doc, base_dir, registry, validator, out);
  std::vector<MonitorSpec> monitors = check_monitors(doc, registry, validator, out);
  const Topology topology = check_graph(drafts, registry, out);
  if (!out.empty()) return;
  result.pipeline = resolve_pipeline(doc, drafts, topology, std::move(monitors), base_dir, file, registry);
}

}  // namespace yoloflow::core
