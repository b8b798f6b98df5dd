#include "runtime/pipeline/topology.h"

#include <algorithm>
#include <functional>
#include <map>

namespace yoloflow::core {
namespace {

std::string did_you_mean(const std::string& name, const std::vector<std::string>& candidates) {
  const auto guess = closest_name(name, candidates);
  return guess.empty() ? std::string() : "; did you mean '" + guess + "'?";
}

std::string label(const TopologyStage& s) {
  return std::string(kind_name(s.info->kind)) + " '" + s.info->name + "'";
}

}  // namespace

Topology check_topology(const std::vector<TopologyStage>& stages,
                        const std::set<std::string>& all_names, Diagnostics& out) {
  Topology topo;
  std::map<std::string, const TopologyStage*> by_name;
  for (const auto& s : stages) by_name[s.name] = &s;
  const std::vector<std::string> names(all_names.begin(), all_names.end());
  const std::size_t errors_before = out.size();

  // Edges as written: each stage names the one stage it reads from.
  for (const auto& s : stages) {
    const json& node = *s.node;
    const std::string path = "stages." + s.name;
    const StageFlow flow = stage_flow(s.info->kind);
    if (!node.contains("input")) {
      if (flow.reads) {
        out.push_back({path, label(s) + " reads " + flow.reads + " but names no stage: add \"input\": \"<stage>\""});
      }
      continue;
    }
    const json& v = node["input"];
    const std::string ipath = path + ".input";
    if (!v.is_string()) {
      out.push_back({ipath, "must be a string naming the stage this one reads from"});
      continue;
    }
    if (!flow.reads) {
      out.push_back({ipath, label(s) + " reads from no stage: a " + kind_name(s.info->kind) +
                                (flow.gives ? " starts a pipeline" : " is not a stage of the graph")});
      continue;
    }
    const std::string from = v.get<std::string>();
    if (all_names.count(from) == 0) {
      const auto dot = from.find('.');
      if (dot != std::string::npos && all_names.count(from.substr(0, dot)) > 0) {
        out.push_back({ipath, "\"" + from + "\": name the stage alone (\"" + from.substr(0, dot) +
                                  "\"); stages have one input and one output, so there are no ports to name"});
      } else {
        out.push_back({ipath, "unknown stage '" + from + "'" + did_you_mean(from, names)});
      }
      continue;
    }
    auto fit = by_name.find(from);
    if (fit == by_name.end()) continue;  // its plugin is unknown: reported already
    const TopologyStage& src = *fit->second;
    const StageFlow given = stage_flow(src.info->kind);
    if (!given.gives) {
      out.push_back({ipath, "stage '" + from + "' (" + label(src) + ") gives nothing to read"});
      continue;
    }
    if (std::string(given.gives) != flow.reads) {
      out.push_back({ipath, "type mismatch: '" + from + "' (" + label(src) + ") gives " + given.gives + " but " +
                                label(s) + " reads " + flow.reads +
                                (std::string(flow.reads) == "batches" ? ": put a batcher between them" : "")});
    }
    topo.edges.push_back({from, s.name});
  }

  // Every output feeding exactly one stage.
  std::map<std::string, std::vector<std::string>> consumers;  // producer -> consumers
  for (const auto& e : topo.edges) consumers[e.from].push_back(e.to);
  for (const auto& s : stages) {
    const StageFlow flow = stage_flow(s.info->kind);
    if (!flow.gives) continue;
    const auto it = consumers.find(s.name);
    if (it == consumers.end()) {
      // A stage whose plugin is unknown may be the consumer: reported already.
      if (stages.size() != all_names.size()) continue;
      out.push_back({"stages." + s.name, "the " + std::string(flow.gives) + " of " + label(s) + " feed no stage"});
    } else if (it->second.size() > 1) {
      std::string list;
      for (const auto& c : it->second) list += (list.empty() ? "'" : ", '") + c + "'";
      out.push_back({"stages." + s.name, "the " + std::string(flow.gives) + " of " + label(s) + " feed several stages (" +
                                             list + "): each stage feeds exactly one"});
    }
  }

  // Cycles (depth-first search; each cycle reported once, by its members in order).
  std::map<std::string, std::vector<std::string>> next;
  for (const auto& e : topo.edges) next[e.from].push_back(e.to);
  std::map<std::string, int> state;  // 0 new, 1 on stack, 2 done
  std::vector<std::string> stack, post;
  bool cycle = false;
  std::function<void(const std::string&)> visit = [&](const std::string& n) {
    state[n] = 1;
    stack.push_back(n);
    for (const auto& m : next[n]) {
      if (state[m] == 1 && !cycle) {
        cycle = true;
        std::string text;
        for (auto it = std::find(stack.begin(), stack.end(), m); it != stack.end(); ++it) {
          text += *it + " -> ";
        }
        out.push_back({"stages", "the stages form a cycle: " + text + m});
      } else if (state[m] == 0) {
        visit(m);
      }
    }
    stack.pop_back();
    state[n] = 2;
    post.push_back(n);
  };
  for (const auto& s : stages) {
    if (state[s.name] == 0) visit(s.name);
  }
  topo.order.assign(post.rbegin(), post.rend());
  if (out.size() != errors_before) return topo;
  if (stages.size() != all_names.size()) return topo;

  // The runner's shape: source -> augmentation* -> batcher -> sink.
  const std::string shape =
      "the graph runner supports linear pipelines only: one source, then any augmentations "
      "in a chain, one batcher and one sink";
  std::vector<const TopologyStage*> sources;
  for (const auto& s : stages) {
    if (s.info->kind == Kind::Source) sources.push_back(&s);
  }
  if (sources.size() != 1) {
    out.push_back({"stages", shape + " (this pipeline has " + std::to_string(sources.size()) +
                                 " sources)"});
    return topo;
  }
  std::vector<const TopologyStage*> chain = {sources[0]};
  while (true) {
    const auto it = next.find(chain.back()->name);
    if (it == next.end() || it->second.empty()) break;
    if (it->second.size() != 1) break;
    chain.push_back(by_name[it->second[0]]);
    if (chain.size() > stages.size()) break;
  }
  bool linear = chain.size() == stages.size() && chain.size() >= 3;
  for (std::size_t i = 0; linear && i < chain.size(); ++i) {
    const Kind k = chain[i]->info->kind;
    const Kind want = i == 0                      ? Kind::Source
                      : i + 1 == chain.size()     ? Kind::Sink
                      : i + 2 == chain.size()     ? Kind::Batcher
                                                  : Kind::Augmentation;
    if (k != want) linear = false;
  }
  if (!linear) {
    std::string got;
    for (const auto* s : chain) got += (got.empty() ? "" : " -> ") + s->name;
    out.push_back({"stages", shape + " (from the source this pipeline runs " + got +
                                 (chain.size() == stages.size() ? "" : ", and other stages branch off") +
                                 ")"});
    return topo;
  }
  topo.source = chain.front()->name;
  topo.sink = chain.back()->name;
  topo.batcher = chain[chain.size() - 2]->name;
  for (std::size_t i = 1; i + 2 < chain.size(); ++i) topo.augmentations.push_back(chain[i]->name);
  return topo;
}

}  // namespace yoloflow::core
