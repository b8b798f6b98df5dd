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

std::vector<std::string> port_names(const std::vector<PortSpec>& ports) {
  std::vector<std::string> out;
  for (const auto& p : ports) out.push_back(p.name);
  return out;
}

const PortSpec* find_port(const std::vector<PortSpec>& ports, const std::string& name) {
  for (const auto& p : ports) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string label(const TopologyStage& s) {
  return std::string(kind_name(s.info->kind)) + " '" + s.info->name + "'";
}

struct Wanted {
  std::string to_port, ref, path;  // ref: "node" or "node.port"
};

}  // namespace

Topology check_topology(const std::vector<TopologyStage>& stages,
                        const std::set<std::string>& all_names, Diagnostics& out) {
  Topology topo;
  std::map<std::string, const TopologyStage*> by_name;
  for (const auto& s : stages) by_name[s.name] = &s;
  const std::vector<std::string> names(all_names.begin(), all_names.end());
  const std::size_t errors_before = out.size();

  // Connections as written.
  std::map<std::string, std::vector<EdgeSpec>> into;  // consumer -> its edges
  for (const auto& s : stages) {
    const json& node = *s.node;
    const std::string path = "stages." + s.name;
    std::vector<Wanted> wanted;
    const bool has_input = node.contains("input"), has_inputs = node.contains("inputs");
    if (has_input && has_inputs) {
      out.push_back({path, "give either \"input\" or \"inputs\", not both"});
      continue;
    }
    if (has_input) {
      const json& v = node["input"];
      if (!v.is_string()) {
        out.push_back({path + ".input", "must be a string naming the stage it reads from "
                                        "(\"node\" or \"node.port\")"});
      } else if (s.info->inputs.empty()) {
        out.push_back({path + ".input", label(s) + " has no input port: a " +
                                            kind_name(s.info->kind) + " reads from no stage"});
      } else if (s.info->inputs.size() > 1) {
        std::string ports;
        for (const auto& p : s.info->inputs) ports += (ports.empty() ? "" : ", ") + p.name;
        out.push_back({path + ".input", label(s) + " has several input ports (" + ports +
                                            "): connect each with \"inputs\": {\"port\": \"node.port\"}"});
      } else {
        wanted.push_back({s.info->inputs[0].name, v.get<std::string>(), path + ".input"});
      }
    }
    if (has_inputs) {
      const json& v = node["inputs"];
      if (!v.is_object()) {
        out.push_back({path + ".inputs", "must be an object mapping input ports to \"node.port\""});
      } else {
        for (auto it = v.begin(); it != v.end(); ++it) {
          if (!it.key().empty() && it.key()[0] == '_') continue;
          const std::string ipath = path + ".inputs." + it.key();
          if (!find_port(s.info->inputs, it.key())) {
            std::string msg = "unknown input port '" + it.key() + "' of " + label(s);
            msg += s.info->inputs.empty() ? " (it has no input ports)"
                                          : did_you_mean(it.key(), port_names(s.info->inputs));
            out.push_back({ipath, msg});
            continue;
          }
          if (!it->is_string()) {
            out.push_back({ipath, "must be a string \"node\" or \"node.port\""});
            continue;
          }
          wanted.push_back({it.key(), it->get<std::string>(), ipath});
        }
      }
    }
    for (const auto& w : wanted) {
      const auto dot = w.ref.find('.');
      const std::string from = w.ref.substr(0, dot);
      std::string from_port = dot == std::string::npos ? "" : w.ref.substr(dot + 1);
      if (all_names.count(from) == 0) {
        out.push_back({w.path, "unknown stage '" + from + "'" + did_you_mean(from, names)});
        continue;
      }
      auto fit = by_name.find(from);
      if (fit == by_name.end()) continue;  // its plugin is unknown: reported already
      const TopologyStage& src = *fit->second;
      const PortSpec* out_port = nullptr;
      if (from_port.empty()) {
        if (src.info->outputs.size() == 1) {
          out_port = &src.info->outputs[0];
        } else if (src.info->outputs.empty()) {
          out.push_back({w.path, "stage '" + from + "' (" + label(src) +
                                     ") has no output to read from"});
          continue;
        } else {
          out.push_back({w.path, "stage '" + from + "' has several outputs: name one as \"" +
                                     from + "." + src.info->outputs[0].name + "\""});
          continue;
        }
      } else {
        out_port = find_port(src.info->outputs, from_port);
        if (!out_port) {
          std::string msg = "unknown output port '" + from_port + "' of stage '" + from + "' (" +
                            label(src) + ")";
          msg += src.info->outputs.empty() ? ", which has no outputs"
                                           : did_you_mean(from_port, port_names(src.info->outputs));
          out.push_back({w.path, msg});
          continue;
        }
      }
      const PortSpec* in_port = find_port(s.info->inputs, w.to_port);
      EdgeSpec e{from, out_port->name, s.name, w.to_port};
      if (in_port && in_port->type != out_port->type) {
        out.push_back({w.path, "type mismatch: '" + from + "." + out_port->name + "' produces " +
                                   out_port->type + " but '" + s.name + "." + w.to_port +
                                   "' expects " + in_port->type});
      }
      into[s.name].push_back(e);
      topo.edges.push_back(e);
    }
  }

  // Every input connected; every output feeding exactly one stage.
  std::map<std::string, std::vector<std::string>> consumers;  // "node.port" -> consumers
  for (const auto& e : topo.edges) consumers[e.from + "." + e.from_port].push_back(e.to);
  for (const auto& s : stages) {
    for (const auto& p : s.info->inputs) {
      const auto& edges = into[s.name];
      const bool connected = std::any_of(edges.begin(), edges.end(),
                                         [&](const EdgeSpec& e) { return e.to_port == p.name; });
      const bool attempted = s.node->contains("input") || s.node->contains("inputs");
      if (!connected && !attempted) {
        out.push_back({"stages." + s.name, "input port '" + p.name + "' (" + p.type + ") of " +
                                               label(s) + " is not connected: add \"input\": "
                                               "\"<stage>\""});
      }
    }
    for (const auto& p : s.info->outputs) {
      const auto it = consumers.find(s.name + "." + p.name);
      if (it == consumers.end()) {
        // A stage whose plugin is unknown may be the consumer: reported already.
        if (stages.size() != all_names.size()) continue;
        out.push_back({"stages." + s.name, "output '" + p.name + "' (" + p.type + ") of " +
                                               label(s) + " feeds no stage"});
      } else if (it->second.size() > 1) {
        std::string list;
        for (const auto& c : it->second) list += (list.empty() ? "'" : ", '") + c + "'";
        out.push_back({"stages." + s.name, "output '" + p.name + "' of " + label(s) +
                                               " feeds several stages (" + list +
                                               "): each output feeds exactly one stage"});
      }
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
    if (k != want || chain[i]->info->inputs.size() > 1 || chain[i]->info->outputs.size() > 1) {
      linear = false;
    }
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
