#pragma once
// The graph a pipeline describes: each stage names the one stage it reads from ("input"), what
// flows on each edge follows from the two stages' kinds, and the graph must be the chain the
// runner executes: source, augmentations, batcher, sink. There are no ports: every pipeline is
// such a chain, and a graph of another shape (two sources mixed, a branch) would need a runner
// that can run it before the format could describe it.
#include <set>
#include <string>
#include <vector>

#include "runtime/pipeline/pipeline.h"
#include "runtime/plugin/stage_flow.h"
#include "yoloflow/plugin.h"

namespace yoloflow::core {

struct TopologyStage {
  std::string name;
  const json* node = nullptr;          // the stage object as written
  const ComponentInfo* info = nullptr;  // its kind
};

struct Topology {
  std::vector<EdgeSpec> edges;
  std::vector<std::string> order;  // stages, producers before consumers
  std::string source, batcher, sink;
  std::vector<std::string> augmentations;
};

// Checks edges between `stages` (those whose plugin was found); `all_names` also holds
// stages whose plugin is unknown, so an edge to them is not reported a second time.
// Appends every problem to `out`; the linear shape is checked only when all else is valid.
Topology check_topology(const std::vector<TopologyStage>& stages,
                        const std::set<std::string>& all_names, Diagnostics& out);

}  // namespace yoloflow::core
