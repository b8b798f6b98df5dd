#pragma once
// A pipeline, validated and resolved (docs/pipeline-format.md): what the graph runner
// (runtime/graph/graph_runner.h) and the training engine build from without further checks.
//
// Everything is checked before any component is constructed (pipeline_validation.h): JSON
// syntax, top-level settings, plugins and their parameters (nested components too), ports,
// edges, cycles, types and the annotation fields each stage needs (annotation_flow.h). Every
// problem is reported at once, each with its JSON path. A pipeline file is read with the command
// line's words applied by load_pipeline (runtime/words/pipeline_loading.h).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/plugin/registry.h"
#include "yoloflow/params.h"

namespace yoloflow::core {

struct StageSpec {
  std::string name;    // key under "stages"
  Kind kind = Kind::Source;
  std::string plugin;  // component name
  std::string file;    // plugin library it comes from
  json params;         // as written (schedules kept), defaults filled, paths absolute
  const RegisteredComponent* component = nullptr;  // owned by the registry
  std::string path() const { return "stages." + name; }
  // "augmentation 'flip'"
  std::string label() const;
};

struct EdgeSpec {
  std::string from, to;  // stage names: `to` reads what `from` gives
};

struct MonitorSpec {
  std::string plugin;
  json params;       // defaults filled, paths absolute
  std::string path;  // "monitors[0]"
  const RegisteredComponent* component = nullptr;
};

struct Pipeline {
  std::string file;  // the pipeline file ("" when parsed from text)
  std::string dir;   // folder relative Path parameters are resolved against
  json document;     // the resolved pipeline (what --print-resolved prints)

  std::string name;
  int epochs = 1;
  std::uint64_t seed = 0;
  bool deterministic = false;
  int workers = 0;        // 0 = all cores
  int max_in_flight = 0;  // 0 = automatic
  bool ordered = false;
  bool shuffle = true;
  std::string device = "auto";

  std::vector<StageSpec> stages;  // in graph order (sources first)
  std::vector<EdgeSpec> edges;
  std::vector<MonitorSpec> monitors;

  // The linear chain the runner executes: source -> augmentations... -> batcher -> sink.
  std::string source, batcher, sink;
  std::vector<std::string> augmentations;

  const StageSpec& stage(const std::string& name) const;  // throws Error when unknown
  // The image size at `epoch` (a schedule evaluated). `of_epochs`: the run's epoch count as
  // planned now, which schedules counted from the end follow (0: `epochs`).
  int imgsz(int epoch, int of_epochs = 0) const;
  // A stage's parameters as its component receives them at `epoch` (schedules evaluated over
  // `of_epochs`, as imgsz).
  json stage_params(const std::string& name, int epoch, int of_epochs = 0) const;
};

struct LoadedPipeline {
  std::optional<Pipeline> pipeline;
  Diagnostics diagnostics;  // empty exactly when `pipeline` is set
  Diagnostics warnings;     // what was adjusted (an imgsz rounded up to the stride); also logged
  bool ok() const { return pipeline.has_value(); }
};

// The host's schema of the top-level settings (name, epochs, imgsz, seed, ...).
const Schema& pipeline_schema();

// "file: path: message" lines, one per diagnostic.
std::string format_diagnostics(const Diagnostics& diagnostics, const std::string& file);

}  // namespace yoloflow::core
