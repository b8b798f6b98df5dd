// The pipeline's top-level settings schema and what a resolved Pipeline answers (see pipeline.h).
#include "runtime/pipeline/pipeline.h"

#include <sstream>

#include "runtime/pipeline/component_spec.h"
#include "yoloflow/error.h"

namespace yoloflow::core {
namespace {

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

int Pipeline::imgsz(int epoch, int of_epochs) const {
  const json resolved = pipeline_schema().resolve(document, epoch, of_epochs > 0 ? of_epochs : epochs);
  return static_cast<int>(resolved["imgsz"].get<std::int64_t>());
}

json Pipeline::stage_params(const std::string& n, int epoch, int of_epochs) const {
  const auto& s = stage(n);
  return s.component->info.schema.resolve(s.params, epoch, of_epochs > 0 ? of_epochs : epochs);
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

}  // namespace yoloflow::core
