#pragma once
// A pipeline document that passed validation made into the Pipeline the graph runner and the
// trainer build from: its settings and every stage's and monitor's parameters resolved
// (defaults filled, relative paths made absolute against the pipeline's folder, schedules kept),
// the stages in graph order, the document as --print-resolved prints it. Kept apart from the
// checks (pipeline_validation.cpp), which call it only once they found nothing wrong.
#include <string>
#include <vector>

#include "runtime/pipeline/pipeline.h"
#include "runtime/pipeline/topology.h"

namespace yoloflow::core {

// A stage as validation found it: its object in the document and its component (null when
// the plugin is unknown).
struct StageDraft {
  std::string name;
  const json* node = nullptr;
  const RegisteredComponent* rc = nullptr;
};

// The Pipeline of valid `doc`: `drafts` are its stages, `topology` their order and edges,
// `monitors` its monitors with their parameters as given; `file` is the pipeline file ("" for
// text) and `base_dir` the folder relative paths are resolved against.
Pipeline resolve_pipeline(const json& doc, const std::vector<StageDraft>& drafts, const Topology& topology,
                          std::vector<MonitorSpec> monitors, const std::string& base_dir, const std::string& file,
                          const Registry& registry);

}  // namespace yoloflow::core
