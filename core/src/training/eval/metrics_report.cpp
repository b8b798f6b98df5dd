#include "training/eval/metrics_report.h"

#include <cstdio>

#include "yoloflow/printable.h"

namespace yoloflow::core {
namespace {

std::string class_name(const std::vector<std::string>& names, int cls) {
  return cls >= 0 && static_cast<std::size_t>(cls) < names.size() ? names[static_cast<std::size_t>(cls)]
                                                                    : std::to_string(cls);
}

std::string row(const std::string& name, int images, int instances, double p, double r, double m50, double m) {
  char line[256];
  std::snprintf(line, sizeof line, "%22s%11d%11d%11.3g%11.3g%11.3g%11.3g\n", name.c_str(), images, instances, p, r, m50,
                m);
  return line;
}

}  // namespace

std::string metrics_table(const MetricsResult& result, const std::vector<std::string>& names) {
  char header[256];
  std::snprintf(header, sizeof header, "%22s%11s%11s%11s%11s%11s%11s\n", "Class", "Images", "Instances", "Box(P", "R",
                "mAP50", "mAP50-95)");
  std::string out = header;
  out += row("all", result.images, result.instances, result.precision, result.recall, result.map50, result.map50_95);
  for (const auto& c : result.per_class) {
    // A class name is shown escaped (yoloflow/printable.h): one row, whatever it holds.
    out += row(printable(class_name(names, c.cls)), c.images, c.instances, c.precision, c.recall, c.ap50, c.ap50_95);
  }
  return out;
}

nlohmann::ordered_json metrics_json(const MetricsResult& result, const std::vector<std::string>& names) {
  nlohmann::ordered_json j;
  j["precision"] = result.precision;
  j["recall"] = result.recall;
  j["mAP50"] = result.map50;
  j["mAP50-95"] = result.map50_95;
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
    e["precision"] = c.precision;
    e["recall"] = c.recall;
    e["mAP50"] = c.ap50;
    e["mAP50-95"] = c.ap50_95;
    j["per_class"].push_back(e);
  }
  return j;
}

}  // namespace yoloflow::core
