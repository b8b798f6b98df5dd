#include "training/model/model_yaml.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "runtime/pipeline/architecture_name.h"
#include "yoloflow/error.h"

namespace yoloflow::core {
namespace {

// What the yolo11 model plugin builds, written as Ultralytics' model yamls write it (its layer
// rows unscaled, the scales' depth, width and channel cap): the plugin's architecture, for
// comparing a user's file row by row.
constexpr const char* kYolo11Layers = R"(
- [-1, 1, Conv, [64, 3, 2]]
- [-1, 1, Conv, [128, 3, 2]]
- [-1, 2, C3k2, [256, False, 0.25]]
- [-1, 1, Conv, [256, 3, 2]]
- [-1, 2, C3k2, [512, False, 0.25]]
- [-1, 1, Conv, [512, 3, 2]]
- [-1, 2, C3k2, [512, True]]
- [-1, 1, Conv, [1024, 3, 2]]
- [-1, 2, C3k2, [1024, True]]
- [-1, 1, SPPF, [1024, 5]]
- [-1, 2, C2PSA, [1024]]
- [-1, 1, nn.Upsample, [None, 2, "nearest"]]
- [[-1, 6], 1, Concat, [1]]
- [-1, 2, C3k2, [512, False]]
- [-1, 1, nn.Upsample, [None, 2, "nearest"]]
- [[-1, 4], 1, Concat, [1]]
- [-1, 2, C3k2, [256, False]]
- [-1, 1, Conv, [256, 3, 2]]
- [[-1, 13], 1, Concat, [1]]
- [-1, 2, C3k2, [512, False]]
- [-1, 1, Conv, [512, 3, 2]]
- [[-1, 10], 1, Concat, [1]]
- [-1, 2, C3k2, [1024, True]]
)";
constexpr const char* kDetectHead = "[[16, 19, 22], 1, Detect, [nc]]";
constexpr const char* kSegmentHead = "[[16, 19, 22], 1, Segment, [nc, 32, 256]]";

struct Scale {
  const char* letter;
  double depth, width, max_channels;
};
constexpr Scale kScales[] = {{"n", 0.50, 0.25, 1024}, {"s", 0.50, 0.50, 1024}, {"m", 0.50, 1.00, 512},
                             {"l", 1.00, 1.00, 512},  {"x", 1.00, 1.50, 512}};

int line_of(const YAML::Node& node) { return node.Mark().line + 1; }

bool as_number(const std::string& s, double& v) {
  if (s.empty()) return false;
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return end != nullptr && *end == '\0' && std::isfinite(v);
}

// A node as one canonical text, Python's reading of the yaml: numbers by value (1.00 is 1),
// booleans and None in Python's spelling, lists in brackets.
std::string canonical(const YAML::Node& node) {
  if (node.IsSequence()) {
    std::string out = "[";
    for (std::size_t i = 0; i < node.size(); ++i) out += (i ? ", " : "") + canonical(node[i]);
    return out + "]";
  }
  if (node.IsMap()) return "{...}";
  if (node.IsNull()) return "None";
  const std::string s = node.Scalar();
  double v = 0;
  if (as_number(s, v)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.10g", v);
    return buf;
  }
  if (s == "True" || s == "true" || s == "TRUE") return "True";
  if (s == "False" || s == "false" || s == "FALSE") return "False";
  if (s == "None" || s == "null" || s == "~") return "None";
  return s;
}

}  // namespace

ModelYaml read_model_yaml(const std::string& path, const std::string& word) {
  const std::string& what = word;
  YAML::Node doc;
  try {
    doc = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw InvalidInput(word + ": cannot read " + path);
  } catch (const YAML::Exception& e) {
    throw InvalidInput(what + " is not YAML: line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (!doc.IsMap()) throw InvalidInput(what + " is not a model yaml: no mapping of nc, scales, backbone and head");
  ModelYaml out;
  if (doc["nc"]) {
    double nc = 0;
    if (!as_number(doc["nc"].IsScalar() ? doc["nc"].Scalar() : "", nc) || nc < 1 || nc != std::floor(nc)) {
      throw InvalidInput(what + " line " + std::to_string(line_of(doc["nc"])) + ": nc is " + canonical(doc["nc"]) +
                         ", not a class count");
    }
    out.nc = static_cast<long>(nc);
  }
  for (const char* key : {"activation", "kpt_shape"}) {
    if (doc[key]) {
      const std::string why = std::string(key) == "activation" ? "another activation than YOLO11's SiLU"
                                                               : "a pose model (yoloflow trains detect and segment)";
      throw InvalidInput(what + " line " + std::to_string(line_of(doc[key])) + ": '" + key + "' asks for " + why +
                         "; the yolo11 model plugin does not build it");
    }
  }
  if (doc["channels"] && canonical(doc["channels"]) != "3") {
    throw InvalidInput(what + " line " + std::to_string(line_of(doc["channels"])) + ": channels " +
                       canonical(doc["channels"]) + ": the yolo11 model plugin reads 3-channel images");
  }
  const YAML::Node backbone = doc["backbone"], head = doc["head"];
  if (!backbone || !backbone.IsSequence() || !head || !head.IsSequence()) {
    throw InvalidInput(what + " is not a model yaml: it needs 'backbone' and 'head' lists of layers");
  }
  std::vector<YAML::Node> rows;
  for (const auto& r : backbone) rows.push_back(r);
  for (const auto& r : head) rows.push_back(r);
  const YAML::Node stock = YAML::Load(kYolo11Layers);
  // The head row: which task the file asks for.
  std::string task;
  if (!rows.empty()) {
    const std::string last = canonical(rows.back());
    if (last == canonical(YAML::Load(kDetectHead))) task = "detect";
    if (last == canonical(YAML::Load(kSegmentHead))) task = "segment";
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const YAML::Node& r = rows[i];
    const std::string at = what + " line " + std::to_string(line_of(r)) + ": layer " + std::to_string(i);
    if (!r.IsSequence() || r.size() != 4) {
      throw InvalidInput(at + " is " + canonical(r) + ", not [from, repeats, module, args]");
    }
    const bool is_head = i + 1 == rows.size() && i == stock.size();
    if (is_head && !task.empty()) continue;
    const std::string want = i < stock.size() ? canonical(stock[i])
                                              : (i == stock.size() ? std::string(kDetectHead) + " or " + kSegmentHead : "");
    if (i >= stock.size() || canonical(r) != canonical(stock[i])) {
      const std::string module = r[2].IsScalar() ? r[2].Scalar() : canonical(r[2]);
      throw InvalidInput(at + " is " + canonical(r) + " (module " + module + ")" +
                         (want.empty() ? ", after YOLO11's last layer" : ", where YOLO11's is " + want) +
                         ": the yolo11 model plugin builds YOLO11's layers with a Detect or Segment head; other "
                         "layer lists are not built");
    }
  }
  if (rows.size() != stock.size() + 1) {
    throw InvalidInput(what + ": " + std::to_string(rows.size()) + " layers, where YOLO11 has " +
                       std::to_string(stock.size() + 1) + " (its 23 and a Detect or Segment head)");
  }
  // The scale, as Ultralytics' parse_model picks it: the letter after yoloN in the file's name
  // (yolo11s.yaml: s), else the first of its scales; its row gives depth, width and the channel
  // cap. Without scales: depth_multiple and width_multiple (1 when absent), no cap.
  std::string letter;
  std::smatch m;
  const std::string stem = std::filesystem::path(path).stem().string();
  if (std::regex_search(stem, m, std::regex("yolo(e-)?[v]?[0-9]+([nslmx])"))) letter = m[2];
  double d = 1, w = 1, c = 1024;  // no row of YOLO11's asks for more than 1024 channels: no cap
  const YAML::Node scales = doc["scales"];
  if (scales) {
    if (!scales.IsMap() || scales.size() == 0) {
      throw InvalidInput(what + " line " + std::to_string(line_of(scales)) +
                         ": 'scales' is not a mapping of scale letters to [depth, width, max_channels]");
    }
    if (letter.empty()) letter = scales.begin()->first.Scalar();
    const YAML::Node chosen = scales[letter];
    if (!chosen) throw InvalidInput(what + ": its name asks for scale " + letter + ", which its 'scales' do not list");
    const bool three = chosen.IsSequence() && chosen.size() == 3 && chosen[0].IsScalar() && chosen[1].IsScalar() &&
                       chosen[2].IsScalar() && as_number(chosen[0].Scalar(), d) && as_number(chosen[1].Scalar(), w) &&
                       as_number(chosen[2].Scalar(), c) && buildable_multiples(d, w, c);
    if (!three) {
      throw InvalidInput(what + " line " + std::to_string(line_of(chosen)) + ": scale " + letter + " is " +
                         canonical(chosen) + ", not [depth, width, max_channels] (two multiples in (0, 4] and a channel count)");
    }
  } else {
    for (auto [key, value] : {std::pair<const char*, double*>{"depth_multiple", &d}, {"width_multiple", &w}}) {
      const YAML::Node n = doc[key];
      if (n && (!n.IsScalar() || !as_number(n.Scalar(), *value) || !(*value > 0) || *value > 4)) {
        throw InvalidInput(what + " line " + std::to_string(line_of(n)) + ": " + key + " is " + canonical(n) +
                           ", not a multiple in (0, 4]");
      }
    }
  }
  // The yolo11 plugin's letter: it decides C3k2's blocks as Ultralytics' `scale in "mlx"` does,
  // where a scale name that is part of "mlx" (or none at all) counts as m, l or x.
  std::string plugin_letter;
  for (const auto& s : kScales) {
    if (letter == s.letter) plugin_letter = letter;
  }
  if (plugin_letter.empty()) plugin_letter = std::string("mlx").find(letter) != std::string::npos ? "m" : "n";
  const Scale* stock_scale = nullptr;
  for (const auto& s : kScales) {
    if (plugin_letter == s.letter) stock_scale = &s;
  }
  out.architecture = std::string("yolo11") + stock_scale->letter + (task == "segment" ? "-seg" : "");
  if (d != stock_scale->depth || w != stock_scale->width || c != stock_scale->max_channels) {
    // Other multiples than the letter's: the architecture word carries them (architecture_name.h).
    out.architecture += multiples_suffix(d, w, static_cast<std::int64_t>(c));
  }
  return out;
}

}  // namespace yoloflow::core
