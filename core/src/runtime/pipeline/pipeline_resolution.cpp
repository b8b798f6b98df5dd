// A valid pipeline document made into a Pipeline (see pipeline_resolution.h).
#include "runtime/pipeline/pipeline_resolution.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>

#include "runtime/pipeline/component_spec.h"

namespace fs = std::filesystem;

namespace yoloflow::core {

Pipeline resolve_pipeline(const json& doc, const std::vector<StageDraft>& drafts, const Topology& topology,
                          std::vector<MonitorSpec> monitors, const std::string& base_dir, const std::string& file,
                          const Registry& registry) {
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
  return p;
}

}  // namespace yoloflow::core
