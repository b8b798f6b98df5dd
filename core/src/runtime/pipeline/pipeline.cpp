#include "runtime/pipeline/pipeline.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include "runtime/fetch/builtin_datasets.h"
#include "runtime/pipeline/annotation_flow.h"
#include "runtime/pipeline/component_spec.h"
#include "runtime/pipeline/device_word.h"
#include "runtime/pipeline/json_text.h"
#include "runtime/pipeline/overrides.h"
#include "runtime/pipeline/topology.h"
#include "runtime/util/file_checks.h"
#include "yoloflow/data_yaml.h"
#include "yoloflow/error.h"
#include "yoloflow/log.h"
#include "yoloflow/user_file.h"

namespace fs = std::filesystem;

namespace yoloflow::core {
namespace {

bool is_comment(const std::string& key) { return !key.empty() && key[0] == '_'; }

Schema make_pipeline_schema() {
  Schema s;
  s.add_string("name", "").doc("Name of the run (default: the pipeline file's name).");
  s.add_int("epochs", 1).range(1, 100000).fixed().doc("Passes over the source.");
  s.add_int("imgsz", 640).range(32, 8192).doc("Training image size (pixels); may follow a schedule.");
  s.add_int("seed", 0).min(0).fixed().doc("Seed of shuffling and of every sample's random numbers.");
  s.add_bool("deterministic", false).doc("Ask components for bit-reproducible algorithms.");
  s.add_int("workers", 0).range(0, 1024).fixed().doc("Threads running plugin code; 0 = all cores; more than the machine runs at once are capped at that count.");
  s.add_int("max_in_flight", 0).range(0, 1000000).fixed().doc(
      "Most samples alive between source and sink; 0 = automatic (3*batch + 2*workers).");
  s.add_bool("ordered", false).doc("Deliver batches in epoch order (with seed: reproducible).");
  s.add_bool("shuffle", true).doc("Shuffle the sample order each epoch (seeded by seed + epoch).");
  s.add_string("device", "auto").doc("Device for sinks that compute: auto, cpu, cuda, cuda:N.");
  s.add_string("data", "").doc(
      "data.yaml of the dataset, named once: every stage with a dataset parameter that does not name its "
      "own uses it (the source's training data, the train sink's validation split and class names). "
      "Relative to the pipeline file's folder; Ultralytics' dataset names (coco8.yaml, coco128-seg.yaml, ...) that "
      "are no file there are fetched into the datasets folder.");
  s.add_json("plugin_path", json::array()).doc(
      "Plugin folders or libraries this pipeline needs besides the default ones (a list of paths, relative "
      "to the pipeline file's folder), loaded before its stages are checked, as with --plugin-path. A run "
      "folder's pipeline.json lists every one its run loaded, so `train --resume` loads them again.");
  s.add_json("stages", nullptr).required().doc("The graph's nodes, by name.");
  s.add_json("monitors", json::array()).doc("Monitor plugins observing the run.");
  return s;
}

// A data.yaml as read once for every stage that names it: the file, or why it cannot be used.
struct ReadDataset {
  DataYaml yaml;
  std::string error;  // empty when `yaml` was read
};

ReadDataset read_dataset(const fs::path& path) {
  ReadDataset r;
  try {
    r.yaml = read_data_yaml(path.string());
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

// "train, val", or "no split".
std::string split_names(const DataYaml& yaml) {
  std::string names;
  for (const auto& [name, entries] : yaml.splits) names += (names.empty() ? "" : ", ") + name;
  return names.empty() ? "no split" : names;
}

// Every split a stage reads checked to be listed in `data` with entries that exist; `data`'s class
// count, or -1 when it could not be read (with a diagnostic at `where`).
int check_dataset(const ReadDataset& data, const std::string& where,
                  const std::vector<std::pair<std::string, std::string>>& splits, Diagnostics& out) {
  if (!data.error.empty()) {
    out.push_back({where, data.error});
    return -1;
  }
  const DataYaml& yaml = data.yaml;
  for (const auto& [param, split] : splits) {
    const auto it = yaml.splits.find(split);
    if (it == yaml.splits.end()) {
      out.push_back({param, "split '" + split + "' is not in " + yaml.file + " (it lists " + split_names(yaml) + ")"});
      continue;
    }
    for (const auto& entry : it->second) {
      if (const std::string why = unreachable_path(entry); !why.empty()) {
        out.push_back({where, "'" + split + "' of " + yaml.file + " names " + entry + ", which " + why});
      }
    }
  }
  return static_cast<int>(yaml.names.size());
}

// A stage's string parameter as it will be resolved: given, else its schema's default; none when
// the stage has no parameter of that role or it is not a string.
std::optional<std::string> string_param(const RegisteredComponent& rc, const json& params, ParamRole role) {
  const ParamSpec* spec = rc.info.schema.find_role(role);
  if (!spec) return std::nullopt;
  const json value = params.contains(spec->name) ? params[spec->name] : spec->default_json;
  if (!value.is_string()) return std::nullopt;
  return value.get<std::string>();
}

// The splits a stage reads from its data.yaml (its Split and ValidationSplit parameters), with
// the JSON path of each.
std::vector<std::pair<std::string, std::string>> stage_splits(const RegisteredComponent& rc, const json& params,
                                                              const std::string& stage_path) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const ParamRole role : {ParamRole::Split, ParamRole::ValidationSplit}) {
    const auto value = string_param(rc, params, role);
    if (value && !value->empty()) out.emplace_back(stage_path + "." + rc.info.schema.find_role(role)->name, *value);
  }
  return out;
}

// The pipeline's one `data` for every stage with a dataset parameter (ParamRole::Dataset) that
// names none, and every data.yaml a stage will read checked to exist before anything is built.
void share_dataset(json& doc, const std::string& base_dir, const Registry& registry, Diagnostics& out) {
  const bool shared = doc.contains("data") && doc["data"].is_string() && !doc["data"].get<std::string>().empty();
  // The path a data value names; a diagnostic at `where` when it does not exist, said once
  // for a file that several stages name (the pipeline's one `data` fills them all).
  std::set<fs::path> missing;
  auto resolve = [&](const std::string& where, const std::string& value) {
    const fs::path path = (fs::path(value).is_absolute() ? fs::path(value) : fs::path(base_dir) / value).lexically_normal();
    // "does not exist", or why the path leads nowhere ("is a loop of symbolic links").
    if (const std::string why = unreachable_path(path.string()); !why.empty() && missing.insert(path).second) {
      out.push_back({where, value + " " + why + " (looked for " + path.string() + ")"});
    }
    return path;
  };
  // A built-in dataset name that is no file beside the pipeline ("data": "coco8.yaml"): its
  // data.yaml in the datasets folder, fetched first when missing, as data=coco8.yaml on the
  // command line (runtime/fetch/builtin_datasets.h).
  auto named = [&](json& value, const std::string& where) {
    const std::string text = value.get<std::string>();
    const fs::path beside = fs::path(text).is_absolute() ? fs::path(text) : fs::path(base_dir) / text;
    std::error_code ec;
    if (!is_builtin_dataset_name(text) || fs::exists(beside, ec)) return true;
    try {
      value = locate_dataset(text);
      return true;
    } catch (const InvalidInput& e) {
      out.push_back({where, e.what()});
      return false;
    }
  };
  bool shared_found = true;
  if (shared) shared_found = named(doc["data"], "data");
  if (shared && shared_found) resolve("data", doc["data"].get<std::string>());
  // Where each stage's data.yaml is, and how many classes it names: stages that read datasets
  // of different class counts would train one model on labels another one names.
  std::vector<std::tuple<std::string, fs::path, int>> datasets;
  std::map<fs::path, ReadDataset> read;  // each file read once, however many stages name it
  for (const auto& [name, rc] : known_stages(doc, registry)) {
    const ParamSpec* dataset = rc->info.schema.find_role(ParamRole::Dataset);
    if (!dataset) continue;
    const std::string& key = dataset->name;
    json& stage = doc["stages"][name];
    if (!stage.contains("params") || !stage["params"].is_object()) stage["params"] = json::object();
    json& params = stage["params"];
    if (!params.contains(key) && shared) {
      params[key] = doc["data"];
      if (!shared_found) continue;  // said once, at "data"
    }
    if (params.contains(key) && params[key].is_string() && !params[key].get<std::string>().empty()) {
      const std::string where = "stages." + name + ".params." + key;
      if (!named(params[key], where)) continue;
      const fs::path path = resolve(where, params[key].get<std::string>());
      if (missing.count(path) > 0) continue;  // does not exist: said once
      auto cached = read.find(path);
      if (cached == read.end()) cached = read.emplace(path, read_dataset(path)).first;
      const int nc = check_dataset(cached->second, where, stage_splits(*rc, params, "stages." + name + ".params"), out);
      datasets.emplace_back(where, path, nc);
      // A component of this stage given a class count (a model's `nc`) must build the classes the
      // data names: training would stop on it once the data is read.
      for (auto it = params.begin(); it != params.end() && nc > 0; ++it) {
        const json& c = it.value();
        if (!c.is_object() || !c.contains("params") || !c["params"].is_object()) continue;
        const json& given = c["params"];
        if (given.contains("nc") && given["nc"].is_number_integer() && given["nc"].get<int>() > 0 &&
            given["nc"].get<int>() != nc) {
          out.push_back({"stages." + name + ".params." + it.key() + ".params.nc",
                         std::to_string(given["nc"].get<int>()) + " classes, but " + path.string() + " names " +
                             std::to_string(nc) + ": give 0 (the data's count) or the data's count"});
        }
      }
    }
  }
  for (std::size_t i = 1; i < datasets.size(); ++i) {
    const auto& [where0, path0, nc0] = datasets[0];
    const auto& [where, path, nc] = datasets[i];
    if (nc0 > 0 && nc > 0 && nc != nc0) {
      out.push_back({where, path.string() + " names " + std::to_string(nc) + " classes, but " + where0 + " (" +
                                path0.string() + ") names " + std::to_string(nc0) +
                                ": the stages would read different datasets; name it once as the pipeline's `data` "
                                "(or data=D.yaml on the command line)"});
    }
  }
}

// A stage that validates (a ValidationSource parameter) and names no source of its own reads the
// pipeline's source stage, whatever its plugin, with its Split parameter set to the stage's
// ValidationSplit: the same dataset reader that trains also validates. Written into the document,
// so --print-resolved, pipeline.json and every rank of a data-parallel run see the same spec.
void share_validation_source(json& doc, const Registry& registry) {
  const auto stages = known_stages(doc, registry);
  std::vector<std::pair<std::string, const RegisteredComponent*>> sources;
  for (const auto& st : stages) {
    if (st.second->info.kind == Kind::Source) sources.push_back(st);
  }
  if (sources.size() != 1) return;  // none, or ambiguous: the stage must name its own
  const auto& [source_name, source] = sources.front();
  const ParamSpec* split = source->info.schema.find_role(ParamRole::Split);
  if (!split) return;  // cannot be pointed at another split
  const json& source_stage = doc["stages"][source_name];
  for (const auto& [name, rc] : stages) {
    const ParamSpec* spec = rc->info.schema.find_role(ParamRole::ValidationSource);
    if (!spec) continue;
    json& stage = doc["stages"][name];
    if (!stage.contains("params") || !stage["params"].is_object()) stage["params"] = json::object();
    json& params = stage["params"];
    if (params.contains(spec->name) && !params[spec->name].is_null()) continue;
    json spec_json = {{"plugin", source_stage.value("plugin", std::string())},
                      {"params", source_stage.contains("params") && source_stage["params"].is_object() ? source_stage["params"]
                                                                                                       : json::object()}};
    spec_json["params"][split->name] = string_param(*rc, params, ParamRole::ValidationSplit).value_or("val");
    params[spec->name] = spec_json;
  }
}

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

struct StageDraft {
  std::string name;
  const json* node = nullptr;
  const RegisteredComponent* rc = nullptr;
};

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

}  // namespace

const Schema& pipeline_schema() {
  static const Schema schema = make_pipeline_schema();
  return schema;
}

std::string StageSpec::label() const { return component_label(kind, plugin); }

const StageSpec& Pipeline::stage(const std::string& n) const {
  for (const auto& s : stages) {
    if (s.name == n) return s;
  }
  throw Error("the pipeline has no stage '" + n + "'");
}

int Pipeline::imgsz(int epoch) const {
  const json resolved = pipeline_schema().resolve(document, epoch, epochs);
  return static_cast<int>(resolved["imgsz"].get<std::int64_t>());
}

json Pipeline::stage_params(const std::string& n, int epoch) const {
  const auto& s = stage(n);
  return s.component->info.schema.resolve(s.params, epoch, epochs);
}

std::string format_diagnostics(const Diagnostics& diagnostics, const std::string& file) {
  std::ostringstream os;
  for (const auto& d : diagnostics) {
    if (!file.empty()) os << file << ": ";
    if (!d.path.empty()) os << d.path << ": ";
    os << d.message << "\n";
  }
  return os.str();
}

LoadedPipeline load_pipeline(const std::string& path, const std::vector<std::string>& overrides,
                             const Registry& registry) {
  LoadedPipeline result;
  std::string text;
  try {
    text = read_regular_file(path, kMaxPipelineBytes, "pipeline");
  } catch (const Error& e) {
    result.diagnostics.push_back({"", e.what()});
    return result;
  }
  const fs::path abs = fs::absolute(path).lexically_normal();
  return parse_pipeline(text, abs.parent_path().string(), overrides, registry, abs.string());
}

LoadedPipeline parse_pipeline(const std::string& text, const std::string& base_dir,
                              const std::vector<std::string>& overrides, const Registry& registry,
                              const std::string& file) {
  LoadedPipeline result;
  Diagnostics& out = result.diagnostics;
  json doc;
  if (!parse_json_text(text, doc, out)) return result;
  if (!doc.is_object()) {
    out.push_back({"", "a pipeline is a JSON object ({\"stages\": {...}, ...}), not " +
                           std::string(doc.type_name())});
    return result;
  }
  apply_overrides(doc, overrides, registry, out);
  share_dataset(doc, base_dir, registry, out);
  share_validation_source(doc, registry);

  // Top-level settings.
  const std::size_t before = out.size();
  pipeline_schema().validate(doc, "", out, nullptr, "the pipeline");
  strip_leading_dot(out, before);
  if (doc.contains("device") && doc["device"].is_string()) {
    std::string device;
    if (const std::string given = doc["device"].get<std::string>(); !read_device_word(given, device)) {
      out.push_back({"device", device_refusal("", given)});
    }
  }
  if (doc.contains("plugin_path")) {
    const json& list = doc["plugin_path"];
    if (!list.is_array()) {
      out.push_back({"plugin_path", "expected a list of paths, e.g. [\"plugins/build\"], got " + std::string(list.type_name())});
    } else {
      for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string where = "plugin_path[" + std::to_string(i) + "]";
        if (!list[i].is_string() || list[i].get<std::string>().empty()) {
          out.push_back({where, "expected a non-empty path (a string)"});
          continue;
        }
        // Loaded before the stages are checked (as --plugin-path): a path that names nothing
        // would leave its components "unknown" with no word of why.
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
  }
  // The image size must be a multiple of YOLO's largest stride (32): rounded up with a
  // warning, as Ultralytics' check_imgsz does, rather than failing inside the network.
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

  // Stages: find each plugin and validate its parameters.
  RegistryComponentValidator validator(registry);
  std::vector<StageDraft> drafts;
  auto sit = doc.find("stages");
  if (sit != doc.end() && !sit->is_null()) {
    if (!sit->is_object()) {
      out.push_back({"stages", "must be an object mapping stage names to stages"});
    } else if (sit->empty()) {
      out.push_back({"stages", "is empty: a pipeline needs at least a source, a batcher and a sink"});
    }
  }
  if (sit != doc.end() && sit->is_object()) {
    for (auto it = sit->begin(); it != sit->end(); ++it) {
      const std::string& name = it.key();
      if (is_comment(name)) continue;
      const std::string path = "stages." + name;
      if (name.find('.') != std::string::npos) {
        out.push_back({path, "a stage name may not contain '.' (edges name ports as node.port)"});
        continue;
      }
      const json& stage = *it;
      if (!stage.is_object()) {
        out.push_back({path, "a stage must be an object with \"plugin\", got " +
                                 std::string(stage.type_name())});
        continue;
      }
      validate_stage_keys(name, stage, out);
      StageDraft draft;
      draft.name = name;
      draft.node = &stage;
      auto pit = stage.find("plugin");
      if (pit == stage.end() || !pit->is_string()) {
        out.push_back({path + ".plugin", pit == stage.end()
                                             ? "is required: the name of a source, augmentation, "
                                               "batcher or sink plugin"
                                             : "must be a string (a plugin name)"});
        drafts.push_back(draft);
        continue;
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
      drafts.push_back(draft);
      if (!draft.rc) continue;
      json params = json::object();
      if (auto prm = stage.find("params"); prm != stage.end()) {
        if (!prm->is_object()) {
          out.push_back({path + ".params", "must be an object of parameters"});
          continue;
        }
        params = *prm;
      }
      const std::size_t before_stage = out.size();
      draft.rc->info.schema.validate(params, path + ".params", out, &validator,
                                     component_label(draft.rc->info.kind, draft.rc->info.name));
      validator.validate_defaults(draft.rc->info.schema, params, path + ".params", out);
      // What a built-in stage refuses beyond its schema, as its configure() would (ParamsCheck).
      if (out.size() == before_stage && draft.rc->check != nullptr) {
        draft.rc->check(resolve_params(draft.rc->info.schema, params, base_dir, registry), path + ".params", registry,
                        out);
      }
    }
  }

  // Monitors.
  std::vector<MonitorSpec> monitors;
  if (auto mit = doc.find("monitors"); mit != doc.end() && !mit->is_null()) {
    if (!mit->is_array()) {
      out.push_back({"monitors", "must be a list of {\"plugin\": NAME, \"params\": {...}}"});
    } else {
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
    }
  }

  // Ports and edges, only between stages whose plugin was found.
  std::vector<TopologyStage> topo;
  for (const auto& d : drafts) {
    if (d.rc) topo.push_back({d.name, d.node, &d.rc->info});
  }
  std::set<std::string> all_names;
  for (const auto& d : drafts) all_names.insert(d.name);
  Topology topology = check_topology(topo, all_names, out);
  // The annotation fields along the chain, once there is one: a field the loss needs that a stage
  // drops would otherwise surface as a failed step, or as a model trained without it.
  if (!topology.source.empty()) {
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
  }
  if (!out.empty()) return result;

  // Everything is valid: resolve.
  Pipeline p;
  p.file = file;
  p.dir = base_dir;
  json settings = doc;
  settings.erase("stages");
  settings.erase("monitors");
  json resolved = resolve_params(pipeline_schema(), settings, "", registry);
  resolved.erase("stages");
  resolved.erase("monitors");
  p.name = resolved["name"].get<std::string>();
  if (p.name.empty()) p.name = file.empty() ? "pipeline" : fs::path(file).stem().string();
  resolved["name"] = p.name;
  p.epochs = static_cast<int>(resolved["epochs"].get<std::int64_t>());
  p.seed = resolved["seed"].get<std::uint64_t>();
  p.deterministic = resolved["deterministic"].get<bool>();
  p.workers = static_cast<int>(resolved["workers"].get<std::int64_t>());
  p.max_in_flight = static_cast<int>(resolved["max_in_flight"].get<std::int64_t>());
  p.ordered = resolved["ordered"].get<bool>();
  p.shuffle = resolved["shuffle"].get<bool>();
  p.device = resolved["device"].get<std::string>();
  // Paths absolute, so that the document means the same read from anywhere (a run folder's
  // pipeline.json is read from that folder by `train --resume`).
  auto absolute = [&](const std::string& value) {
    const fs::path path(value);
    return (path.is_absolute() ? path : fs::path(base_dir) / path).lexically_normal().string();
  };
  if (const std::string data = resolved["data"].get<std::string>(); !data.empty()) resolved["data"] = absolute(data);
  for (auto& entry : resolved["plugin_path"]) entry = absolute(entry.get<std::string>());
  resolved["stages"] = json::object();
  for (const auto& name : topology.order) {
    const auto& d = *std::find_if(drafts.begin(), drafts.end(),
                                  [&](const StageDraft& x) { return x.name == name; });
    StageSpec s;
    s.name = name;
    s.kind = d.rc->info.kind;
    s.plugin = d.rc->info.name;
    s.file = d.rc->file;
    s.component = d.rc;
    const json given = d.node->contains("params") ? (*d.node)["params"] : json::object();
    s.params = resolve_params(d.rc->info.schema, given, base_dir, registry);
    json node = *d.node;
    node["kind"] = kind_name(s.kind);
    node["params"] = s.params;
    resolved["stages"][name] = node;
    p.stages.push_back(std::move(s));
  }
  resolved["monitors"] = json::array();
  for (auto& m : monitors) {
    m.params = resolve_params(m.component->info.schema, m.params, base_dir, registry);
    resolved["monitors"].push_back({{"plugin", m.plugin}, {"params", m.params}});
  }
  p.monitors = std::move(monitors);
  p.edges = topology.edges;
  p.source = topology.source;
  p.augmentations = topology.augmentations;
  p.batcher = topology.batcher;
  p.sink = topology.sink;
  p.document = std::move(resolved);
  result.pipeline = std::move(p);
  return result;
}

}  // namespace yoloflow::core
