#include "training/eval/metrics_report.h"

#include <cstdio>

#include "runtime/util/text_format.h"
#include "yoloflow/printable.h"

namespace yoloflow::core {
namespace {

std::string class_name(const std::vector<std::string>& names, int cls) {
  return cls >= 0 && static_cast<std::size_t>(cls) < names.size() ? names[static_cast<std::size_t>(cls)]
                                                                    : std::to_string(cls);
}

std::string row(const std::string& name, int images, int instances, const std::vector<double>& values) {
  char line[64];
  std::snprintf(line, sizeof line, "%22s%11d%11d", name.c_str(), images, instances);
  std::string out = line;
  for (double v : values) {
    std::snprintf(line, sizeof line, "%11.3g", v);
    out += line;
  }
  return out + "\n";
}

double value_at(const std::vector<double>& values, std::size_t i) { return i < values.size() ? values[i] : 0.0; }

}  // namespace

std::string metrics_table(const Evaluation& result, const std::vector<MetricColumn>& table,
                          const std::vector<std::string>& names) {
  char cell[64];
  std::snprintf(cell, sizeof cell, "%22s%11s%11s", "Class", "Images", "Instances");
  std::string out = cell;
  for (const auto& c : table) {
    std::snprintf(cell, sizeof cell, "%11s", c.header.c_str());
    out += cell;
  }
  out += "\n";
  std::vector<double> all = result.all;
  all.resize(table.size(), 0.0);
  out += row("all", result.images, result.instances, all);
  for (const auto& c : result.per_class) {
    // A class name is shown escaped (yoloflow/printable.h): one row, whatever it holds.
    out += row(printable(class_name(names, c.cls)), c.images, c.instances, c.values);
  }
  return out;
}

nlohmann::ordered_json metrics_json(const Evaluation& result, const std::vector<MetricColumn>& table,
                                    const std::vector<std::string>& names) {
  nlohmann::ordered_json j;
  for (std::size_t i = 0; i < table.size(); ++i) j[table[i].key] = value_at(result.all, i);
  j["fitness"] = result.fitness;
  j["images"] = result.images;
  j["instances"] = result.instances;
  j["per_class"] = nlohmann::ordered_json::array();
  for (const auto& c : result.per_class) {
    nlohmann::ordered_json e;
    e["class"] = c.cls;
    e["name"] = class_name(names, c.cls);
    e["images"] = c.images;
    e["instances"] = c.instances;
    for (std::size_t i = 0; i < table.size(); ++i) e[table[i].key] = value_at(c.values, i);
    j["per_class"].push_back(e);
  }
  return j;
}

std::string metrics_line(const Evaluation& result, const std::vector<MetricColumn>& table, bool headline) {
  std::string out;
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (headline && !table[i].headline) continue;
    out += (out.empty() ? "" : "  ") + table[i].label + " " + format_fixed(value_at(result.all, i), 4);
  }
  return out;
}

}  // namespace yoloflow::core
