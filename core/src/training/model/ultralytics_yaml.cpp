// YOLO11 as its yaml lists it, layer by layer and scale by scale: what an Ultralytics model's
// yaml is compared against, so that a model the yolo11 plugin cannot build is refused with the
// first layer that differs rather than read into the wrong architecture.
#include "training/model/ultralytics_yaml.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <regex>
#include <utility>

#include "runtime/pipeline/architecture_name.h"
#include "training/model/pickle_json.h"
#include "yoloflow/error.h"

namespace yoloflow::core {
namespace {

using K = PickleValue::Kind;

// YOLO11's detection model as Ultralytics' yolo11.yaml lists it (and as the yolo11 plugin
// builds it): per layer where its input comes from, its repeats and its module.
struct Layer {
  std::vector<int> from;
  int repeats;
  const char* module;
};
const Layer kYolo11[] = {
    {{-1}, 1, "Conv"},  {{-1}, 1, "Conv"},        {{-1}, 2, "C3k2"},   {{-1}, 1, "Conv"},
    {{-1}, 2, "C3k2"},  {{-1}, 1, "Conv"},        {{-1}, 2, "C3k2"},   {{-1}, 1, "Conv"},
    {{-1}, 2, "C3k2"},  {{-1}, 1, "SPPF"},        {{-1}, 2, "C2PSA"},  {{-1}, 1, "nn.Upsample"},
    {{-1, 6}, 1, "Concat"}, {{-1}, 2, "C3k2"},    {{-1}, 1, "nn.Upsample"}, {{-1, 4}, 1, "Concat"},
    {{-1}, 2, "C3k2"},  {{-1}, 1, "Conv"},        {{-1, 13}, 1, "Concat"}, {{-1}, 2, "C3k2"},
    {{-1}, 1, "Conv"},  {{-1, 10}, 1, "Concat"},  {{-1}, 2, "C3k2"},   {{16, 19, 22}, 1, "Detect"},
};
// depth, width, max channels per scale (yolo11.yaml's `scales`).
const std::pair<const char*, std::array<double, 3>> kScales[] = {
    {"n", {0.50, 0.25, 1024}}, {"s", {0.50, 0.50, 1024}}, {"m", {0.50, 1.00, 512}},
    {"l", {1.00, 1.00, 512}},  {"x", {1.00, 1.50, 512}},
};

// The head modules of the tasks read (the yaml's last layer): Detect, or Segment for YOLO11-seg.
const std::pair<const char*, const char*> kHeads[] = {{"Detect", "detect"}, {"Segment", "segment"}};

// Throws InvalidInput naming the file, as every refusal of a checkpoint reads.
struct Refusal {
  const std::string& file_name;
  [[noreturn]] void operator()(const std::string& what) const { throw InvalidInput(file_name + " " + what); }
};

std::string layer_text(const PickleValue& layer) {
  // [from, repeats, module, args] as yaml lists it, e.g. "[-1, 2, C2f]".
  std::string out = "[";
  for (std::size_t k = 0; k < layer.items.size() && k < 3; ++k) {
    const PickleValue* v = layer.items[k];
    out += k ? ", " : "";
    if (v->kind == K::Int) out += std::to_string(v->i);
    else if (v->kind == K::String) out += v->s;
    else if (v->kind == K::List) {
      out += "[";
      for (std::size_t j = 0; j < v->items.size() && j < 8; ++j) {
        out += (j ? ", " : "") + (v->items[j]->kind == K::Int ? std::to_string(v->items[j]->i) : std::string("?"));
      }
      out += "]";
    }
    else out += "?";
  }
  return out + "]";
}

}  // namespace

Yolo11Yaml check_yolo11_yaml(const PickleValue& yaml, const std::string& file_name) {
  const Refusal fail{file_name};
  Yolo11Yaml out;
  const PickleValue* file = yaml.get("yaml_file");
  const std::string named = file && file->kind == K::String ? " (" + file->s + ")" : std::string();
  std::vector<const PickleValue*> layers;
  for (const char* part : {"backbone", "head"}) {
    const PickleValue* list = yaml.get(part);
    if (!list || list->kind != K::List) fail("holds a model whose yaml" + named + " has no " + part + " list; yoloflow reads YOLO11 detection and segmentation models");
    layers.insert(layers.end(), list->items.begin(), list->items.end());
  }
  const std::size_t expected = sizeof kYolo11 / sizeof kYolo11[0];
  for (std::size_t i = 0; i < std::max(layers.size(), expected); ++i) {
    if (i >= layers.size() || i >= expected) {
      fail("holds a model other than YOLO11: its yaml" + named + " lists " + std::to_string(layers.size()) +
           " layers, YOLO11 has " + std::to_string(expected) + "; yoloflow reads YOLO11 detection and segmentation models");
    }
    const PickleValue& l = *layers[i];
    const Layer& want = kYolo11[i];
    const bool last = i + 1 == expected;
    bool module = l.kind == K::List && l.items.size() >= 3 && l.items[2]->kind == K::String;
    if (module && last) {
      bool head = false;
      for (const auto& [name, head_task] : kHeads) {
        if (l.items[2]->s == name) {
          head = true;
          out.task = head_task;
        }
      }
      module = head;
    } else if (module) {
      module = l.items[2]->s == want.module;
    }
    bool same = module && l.items[1]->kind == K::Int && l.items[1]->i == want.repeats;
    if (same) {
      const PickleValue* from = l.items[0];
      std::vector<int> f;
      if (from->kind == K::Int) f.push_back(static_cast<int>(from->i));
      if (from->kind == K::List) {
        for (const PickleValue* x : from->items) f.push_back(x->kind == K::Int ? static_cast<int>(x->i) : 1 << 30);
      }
      same = f == want.from;
    }
    if (!same) {
      std::string wanted = "[";
      for (std::size_t k = 0; k < want.from.size(); ++k) wanted += (k ? ", " : "") + std::to_string(want.from[k]);
      if (want.from.size() == 1) wanted = std::to_string(want.from[0]);
      else wanted += "]";
      fail("holds a model other than YOLO11: layer " + std::to_string(i) + " of its yaml" + named + " is " +
           (l.kind == K::List ? layer_text(l) : l.describe()) + " where YOLO11 has [" + wanted + ", " +
           std::to_string(want.repeats) + ", " + (last ? std::string("Detect or Segment") : std::string(want.module)) +
           "]; yoloflow reads YOLO11 detection and segmentation models");
    }
  }
  std::string scale;
  if (const PickleValue* s = yaml.get("scale"); s && s->kind == K::String) scale = s->s;
  if (scale.empty() && file && file->kind == K::String) {
    std::smatch m;
    if (std::regex_search(file->s, m, std::regex(R"(yolo11([nsmlx])(-seg)?\.yaml$)"))) scale = m[1];
  }
  const std::array<double, 3>* table = nullptr;
  for (const auto& [name, values] : kScales) {
    if (scale == name) table = &values;
  }
  if (!table) fail("holds a YOLO11 model of no known scale" + (scale.empty() ? std::string() : " ('" + scale + "')") +
                   "; yoloflow reads the scales n, s, m, l and x");
  if (const PickleValue* scales = yaml.get("scales"); scales && scales->kind == K::Dict) {
    // The row the model was built with: YOLO11's, or edited ones the yolo11 plugin builds too.
    const PickleValue* row = scales->get(scale);
    const bool three = row && row->kind == K::List && row->items.size() == 3;
    std::array<double, 3> values{NAN, NAN, NAN};
    for (std::size_t k = 0; three && k < 3; ++k) {
      const PickleValue* v = row->items[k];
      values[k] = v->kind == K::Float ? v->f : v->kind == K::Int ? static_cast<double>(v->i) : NAN;
    }
    if (!buildable_multiples(values[0], values[1], values[2])) {
      fail("holds a YOLO11 model whose scale " + scale + " is " + (row ? pickle_to_json(*row, 2, 10).dump() : "missing") +
           ", not [depth, width, max_channels]");
    }
    if (values != *table) out.multiples.assign(values.begin(), values.end());
  }
  out.scale = scale;
  return out;
}

}  // namespace yoloflow::core
