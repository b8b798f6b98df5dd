// The pipeline's datasets made one and checked before validation (see pipeline_datasets.h).
#include "runtime/pipeline/pipeline_datasets.h"

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "runtime/fetch/builtin_datasets.h"
#include "runtime/pipeline/component_spec.h"
#include "yoloflow/data_yaml.h"
#include "yoloflow/error.h"
#include "yoloflow/user_file.h"

namespace fs = std::filesystem;

namespace yoloflow::core {
namespace {

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

}  // namespace

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

}  // namespace yoloflow::core
