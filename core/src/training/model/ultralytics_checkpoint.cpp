#include "training/model/ultralytics_checkpoint.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <regex>

#include "runtime/pipeline/architecture_name.h"
#include "runtime/pipeline/default_documents.h"
#include "runtime/util/string_affixes.h"
#include "yoloflow/error.h"

namespace yoloflow::core {
namespace {

using K = PickleValue::Kind;

// The part of a class name after its module: "ultralytics.nn.modules.block.SPPF" -> "SPPF".
std::string short_class(const std::string& cls) { return cls.substr(cls.rfind('.') + 1); }

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

constexpr std::size_t kMaxModules = 100000;  // yolo11x has about 600
constexpr int kMaxModuleDepth = 64;

class Reader {
 public:
  Reader(TorchFile& file) : file_(file) {}

  [[noreturn]] void fail(const std::string& what) const { throw InvalidInput(file_.name() + " " + what); }

  const PickleValue& dict_in(const PickleValue& state, const char* key, const std::string& module) const {
    const PickleValue* v = state.get(key);
    if (!v || v->kind != K::Dict) {
      fail("is not a readable Ultralytics checkpoint: module '" + module + "' has no " + key + " dict in its pickled state");
    }
    return *v;
  }

  // The state dict of the module tree under `module`, as nn.Module.state_dict() walks it:
  // per module its parameters, its persistent buffers, then its children in order.
  void collect(const PickleValue& module, const std::string& prefix, int depth, NamedTensors& out) {
    const std::string where = prefix.empty() ? std::string("(root)") : prefix.substr(0, prefix.size() - 1);
    if (++modules_ > kMaxModules) fail("is refused: its module tree has more than " + std::to_string(kMaxModules) + " modules");
    if (depth > kMaxModuleDepth) fail("is refused: its module tree is nested deeper than " + std::to_string(kMaxModuleDepth));
    if (module.kind != K::Object || !module.state || module.state->kind != K::Dict) {
      fail("is not a readable Ultralytics checkpoint: module '" + where + "' is " + module.describe() +
           " without a pickled state dict");
    }
    const PickleValue& state = *module.state;
    std::vector<std::string> non_persistent;
    if (const PickleValue* np = state.get("_non_persistent_buffers_set"); np && np->kind == K::Set) {
      for (const PickleValue* n : np->items) {
        if (n->kind == K::String) non_persistent.push_back(n->s);
      }
    }
    for (const char* group : {"_parameters", "_buffers"}) {
      const PickleValue& tensors = dict_in(state, group, where);
      for (std::size_t k = 0; k + 1 < tensors.items.size(); k += 2) {
        const PickleValue* name = tensors.items[k];
        const PickleValue* value = tensors.items[k + 1];
        if (name->kind != K::String) fail("is not a readable Ultralytics checkpoint: module '" + where + "' has a tensor name that is " + name->describe());
        if (value->kind == K::None) continue;
        if (std::strcmp(group, "_buffers") == 0 &&
            std::find(non_persistent.begin(), non_persistent.end(), name->s) != non_persistent.end()) {
          continue;
        }
        out.emplace_back(prefix + name->s, file_.tensor(*value, prefix + name->s));
      }
    }
    const PickleValue& children = dict_in(state, "_modules", where);
    for (std::size_t k = 0; k + 1 < children.items.size(); k += 2) {
      const PickleValue* name = children.items[k];
      const PickleValue* child = children.items[k + 1];
      if (name->kind != K::String) fail("is not a readable Ultralytics checkpoint: module '" + where + "' has a child name that is " + name->describe());
      if (child->kind == K::None) continue;
      collect(*child, prefix + name->s + ".", depth + 1, out);
    }
  }

  // The child module `name` of `module`; null when it has none.
  static const PickleValue* child(const PickleValue* module, const std::string& name) {
    if (!module || module->kind != K::Object || !module->state) return nullptr;
    const PickleValue* children = module->state->get("_modules");
    if (!children) return nullptr;
    const PickleValue* c = children->get(name);
    return c && c->kind == K::Object ? c : nullptr;
  }

 private:
  TorchFile& file_;
  std::size_t modules_ = 0;
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

// Checks that the yaml the model was built from is YOLO11's detection model; returns its scale.
// The head modules of the tasks read (the yaml's last layer): Detect, or Segment for YOLO11-seg.
const std::pair<const char*, const char*> kHeads[] = {{"Detect", "detect"}, {"Segment", "segment"}};

// The scale letter; `task` gets the head's task.
std::string check_yaml(const PickleValue& yaml, const Reader& r, std::string& task, std::vector<double>& multiples) {
  const PickleValue* file = yaml.get("yaml_file");
  const std::string named = file && file->kind == K::String ? " (" + file->s + ")" : std::string();
  std::vector<const PickleValue*> layers;
  for (const char* part : {"backbone", "head"}) {
    const PickleValue* list = yaml.get(part);
    if (!list || list->kind != K::List) r.fail("holds a model whose yaml" + named + " has no " + part + " list; yoloflow reads YOLO11 detection and segmentation models");
    layers.insert(layers.end(), list->items.begin(), list->items.end());
  }
  const std::size_t expected = sizeof kYolo11 / sizeof kYolo11[0];
  for (std::size_t i = 0; i < std::max(layers.size(), expected); ++i) {
    if (i >= layers.size() || i >= expected) {
      r.fail("holds a model other than YOLO11: its yaml" + named + " lists " + std::to_string(layers.size()) +
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
          task = head_task;
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
      r.fail("holds a model other than YOLO11: layer " + std::to_string(i) + " of its yaml" + named + " is " +
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
  if (!table) r.fail("holds a YOLO11 model of no known scale" + (scale.empty() ? std::string() : " ('" + scale + "')") +
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
      r.fail("holds a YOLO11 model whose scale " + scale + " is " + (row ? pickle_to_json(*row, 2, 10).dump() : "missing") +
             ", not [depth, width, max_channels]");
    }
    if (values != *table) multiples.assign(values.begin(), values.end());
  }
  return scale;
}

std::vector<std::string> class_names(const PickleValue* names, int nc, const Reader& r) {
  std::vector<std::string> out;
  if (!names || names->kind == K::None) {
    for (int c = 0; c < nc; ++c) out.push_back(std::to_string(c));
    return out;
  }
  auto text = [](const PickleValue* v) {
    return v->kind == K::String ? v->s : pickle_to_json(*v, 2, 10).dump();
  };
  if (names->kind == K::List || names->kind == K::Tuple) {
    for (const PickleValue* n : names->items) out.push_back(text(n));
  } else if (names->kind == K::Dict) {
    // {0: 'person', 1: 'bicycle', ...}: every index from 0 to nc - 1 once.
    out.assign(names->items.size() / 2, std::string());
    std::vector<bool> seen(out.size(), false);
    for (std::size_t k = 0; k + 1 < names->items.size(); k += 2) {
      const PickleValue* index = names->items[k];
      if (index->kind != K::Int || index->i < 0 || index->i >= static_cast<std::int64_t>(out.size()) || seen[index->i]) {
        r.fail("names its classes with keys other than 0.." + std::to_string(out.size() - 1));
      }
      seen[index->i] = true;
      out[index->i] = text(names->items[k + 1]);
    }
  } else {
    r.fail("has class names that are " + names->describe());
  }
  if (static_cast<int>(out.size()) != nc) {
    r.fail("names " + std::to_string(out.size()) + " classes, but its model has nc " + std::to_string(nc));
  }
  return out;
}

// Valid UTF-8 as it is; any other byte becomes '?', so that the JSON can be written.
std::string utf8_or_marked(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t k = 0; k < s.size();) {
    const auto c = static_cast<unsigned char>(s[k]);
    const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool ok = n > 0 && k + n <= s.size();
    for (std::size_t j = 1; ok && j < n; ++j) ok = (static_cast<unsigned char>(s[k + j]) >> 6) == 0x2;
    if (ok) {
      out.append(s, k, n);
      k += n;
    } else {
      out.push_back('?');
      ++k;
    }
  }
  return out;
}

// The bytes protocol 2 writes as _codecs.encode(text, 'latin1'): each code point one byte.
bool latin1_bytes(const PickleValue& v, std::string& out) {
  if (v.kind == K::Bytes) {
    out = v.s;
    return true;
  }
  if (v.kind != K::Object || v.s != "_codecs.encode" || !v.args || v.args->items.size() != 2 ||
      v.args->items[0]->kind != K::String) {
    return false;
  }
  const std::string& s = v.args->items[0]->s;
  out.clear();
  for (std::size_t k = 0; k < s.size();) {
    const auto c = static_cast<unsigned char>(s[k]);
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      ++k;
    } else if ((c >> 5) == 0x6 && k + 1 < s.size()) {
      const unsigned cp = ((c & 0x1f) << 6) | (static_cast<unsigned char>(s[k + 1]) & 0x3f);
      if (cp > 0xff) return false;
      out.push_back(static_cast<char>(cp));
      k += 2;
    } else {
      return false;
    }
  }
  return true;
}

// numpy.core.multiarray.scalar(numpy.dtype('f8', ...), bytes): the number it holds.
bool numpy_scalar(const PickleValue& v, nlohmann::ordered_json& out) {
  if (!ends_with(v.s, "multiarray.scalar") || !v.args || v.args->items.size() < 2) return false;
  const PickleValue* dtype = v.args->items[0];
  if (dtype->kind != K::Object || dtype->s != "numpy.dtype" || !dtype->args || dtype->args->items.empty() ||
      dtype->args->items[0]->kind != K::String) {
    return false;
  }
  std::string bytes;
  if (!latin1_bytes(*v.args->items[1], bytes)) return false;
  std::string order = "<";
  if (dtype->state && dtype->state->kind == K::Tuple && dtype->state->items.size() > 1 &&
      dtype->state->items[1]->kind == K::String) {
    order = dtype->state->items[1]->s;
  }
  if (order == ">") std::reverse(bytes.begin(), bytes.end());
  const std::string& code = dtype->args->items[0]->s;
  auto read = [&](auto x) {
    if (bytes.size() != sizeof x) return false;
    std::memcpy(&x, bytes.data(), sizeof x);
    out = x;
    return true;
  };
  if (code == "f8") return read(double{});
  if (code == "f4") return read(float{});
  if (code == "i8") return read(std::int64_t{});
  if (code == "i4") return read(std::int32_t{});
  if (code == "i2") return read(std::int16_t{});
  if (code == "i1") return read(std::int8_t{});
  if (code == "u8") return read(std::uint64_t{});
  if (code == "u4") return read(std::uint32_t{});
  if (code == "u2") return read(std::uint16_t{});
  if (code == "u1") return read(std::uint8_t{});
  if (code == "b1" && bytes.size() == 1) {
    out = bytes[0] != 0;
    return true;
  }
  return false;
}

class JsonWriter {
 public:
  JsonWriter(int max_depth, std::size_t max_values) : max_depth_(max_depth), budget_(max_values) {}

  nlohmann::ordered_json operator()(const PickleValue& v, int depth) {
    if (depth > max_depth_ || budget_ == 0) return "...";
    --budget_;
    switch (v.kind) {
      case K::None: return nullptr;
      case K::Bool: return v.b;
      case K::Int: return v.i;
      case K::Float: return v.f;
      case K::String: return utf8_or_marked(v.s);
      case K::Bytes: return "bytes (" + std::to_string(v.s.size()) + ")";
      case K::Tuple:
      case K::List:
      case K::Set: {
        nlohmann::ordered_json a = nlohmann::ordered_json::array();
        for (const PickleValue* x : v.items) a.push_back((*this)(*x, depth + 1));
        return a;
      }
      case K::Dict: return dict(v.items, depth);
      case K::Global: return v.s;
      case K::Storage: return "storage";
      case K::Tensor: return "tensor " + nlohmann::ordered_json(v.tensor ? v.tensor->sizes : std::vector<std::int64_t>{}).dump();
      case K::Object: return object(v, depth);
    }
    return nullptr;
  }

 private:
  nlohmann::ordered_json dict(const std::vector<PickleValue*>& items, int depth) {
    nlohmann::ordered_json o = nlohmann::ordered_json::object();
    for (std::size_t k = 0; k + 1 < items.size(); k += 2) {
      const PickleValue* key = items[k];
      const std::string name = key->kind == K::String ? utf8_or_marked(key->s)
                               : key->kind == K::Int  ? std::to_string(key->i)
                                                      : (*this)(*key, depth + 1).dump();
      o[name] = (*this)(*items[k + 1], depth + 1);
    }
    return o;
  }

  nlohmann::ordered_json object(const PickleValue& v, int depth) {
    nlohmann::ordered_json number;
    if (numpy_scalar(v, number)) return number;
    if (starts_with(v.s, "pathlib.") && v.args) {  // PosixPath('a', 'b'): the parts
      std::string path;
      for (const PickleValue* part : v.args->items) {
        if (part->kind != K::String) continue;
        path += (path.empty() || path.back() == '/' ? "" : "/") + part->s;
      }
      return utf8_or_marked(path);
    }
    // Ultralytics' IterableSimpleNamespace (its train args): the attributes BUILD set.
    if (ends_with(v.s, "SimpleNamespace") && v.state && v.state->kind == K::Dict) return dict(v.state->items, depth);
    return "<" + v.s + ">";
  }

  int max_depth_;
  std::size_t budget_;
};

}  // namespace

nlohmann::ordered_json pickle_to_json(const PickleValue& value, int max_depth, std::size_t max_values) {
  return JsonWriter(max_depth, max_values)(value, 0);
}

nlohmann::json UltralyticsCheckpoint::model_spec() const {
  nlohmann::json spec = train_sink_default("model");
  if (!spec.is_object()) spec = nlohmann::json::object();
  if (!spec.contains("params") || !spec["params"].is_object()) spec["params"] = nlohmann::json::object();
  spec["params"]["scale"] = scale;
  if (multiples.size() == 3) {
    spec["params"]["depth_multiple"] = multiples[0];
    spec["params"]["width_multiple"] = multiples[1];
    spec["params"]["max_channels"] = static_cast<std::int64_t>(multiples[2]);
  }
  spec["params"]["nc"] = nc;
  if (task != "detect") spec["params"]["task"] = task;
  return spec;
}

std::string UltralyticsCheckpoint::architecture() const {
  const nlohmann::json spec = train_sink_default("model");
  std::string name = (spec.is_object() ? spec.value("plugin", std::string()) : std::string()) + scale + task_suffix(task);
  if (multiples.size() == 3) name += multiples_suffix(multiples[0], multiples[1], static_cast<std::int64_t>(multiples[2]));
  return name;
}

bool is_ultralytics_checkpoint(const PickleValue& root) {
  for (const char* key : {"model", "ema"}) {
    const PickleValue* m = root.get(key);
    if (m && m->kind == K::Object && starts_with(m->s, "ultralytics.")) return true;
  }
  return false;
}

UltralyticsCheckpoint read_ultralytics_checkpoint(TorchFile& file, const std::string& entry) {
  Reader r(file);
  const PickleValue& root = file.root();
  UltralyticsCheckpoint out;
  if (entry.empty()) {
    const PickleValue* ema = root.get("ema");
    out.weights_entry = ema && ema->kind == K::Object ? "ema" : "model";
  } else {
    out.weights_entry = entry;
  }
  const PickleValue* model = root.get(out.weights_entry);
  if (!model || model->kind != K::Object) {
    r.fail("is an Ultralytics checkpoint whose '" + out.weights_entry + "' entry is " +
           (model ? model->describe() : std::string("missing")) +
           (entry.empty() ? "" : "; its weights are under '" + std::string(out.weights_entry == "ema" ? "model" : "ema") + "'"));
  }
  out.model_class = model->s;
  if (!model->state || model->state->kind != K::Dict) r.fail("is an Ultralytics checkpoint whose model has no pickled state");
  const PickleValue& state = *model->state;
  const bool segmentation = ends_with(model->s, ".SegmentationModel");
  if (!ends_with(model->s, ".DetectionModel") && !segmentation) {
    const PickleValue* args = state.get("args");
    const PickleValue* task = args && args->kind == K::Dict ? args->get("task") : nullptr;
    r.fail("holds an Ultralytics " + short_class(model->s) +
           (task && task->kind == K::String ? " (task " + task->s + ")" : std::string()) +
           "; yoloflow reads YOLO11 detection and segmentation models (DetectionModel, SegmentationModel)");
  }
  const PickleValue* yaml = state.get("yaml");
  if (!yaml || yaml->kind != K::Dict) r.fail("holds a " + short_class(model->s) + " without the yaml it was built from");
  out.scale = check_yaml(*yaml, r, out.task, out.multiples);
  if (segmentation != (out.task == "segment")) {
    r.fail("holds a " + short_class(model->s) + " whose yaml's head is " + (segmentation ? "Detect" : "Segment") +
           "; a DetectionModel has a Detect head, a SegmentationModel a Segment head");
  }

  const PickleValue* nc = state.get("nc");
  if (!nc || nc->kind != K::Int) nc = yaml->get("nc");
  if (!nc || nc->kind != K::Int || nc->i <= 0 || nc->i > 1000000) r.fail("does not say how many classes its model has (nc)");
  out.nc = static_cast<int>(nc->i);
  out.names = class_names(state.get("names"), out.nc, r);

  // Released YOLO11 weights have SiLU after SPPF's first conv, and so does the yolo11 plugin;
  // Ultralytics 8.4 builds SPPF from yolo11.yaml without it (Conv(..., act=False)), which gives
  // other outputs for the same weights.
  const PickleValue* sequence = Reader::child(model, "model");
  const PickleValue* sppf = Reader::child(sequence, "9");
  const PickleValue* act = Reader::child(Reader::child(sppf, "cv1"), "act");
  if (!sppf || !ends_with(sppf->s, ".SPPF")) r.fail("holds a YOLO11 model whose layer 9 is not an SPPF module");
  if (!act || !ends_with(act->s, ".SiLU")) {
    r.fail("holds a YOLO11 model whose SPPF (layer 9) has " + (act ? short_class(act->s) : std::string("nothing")) +
           " after its first conv, as Ultralytics 8.4 builds it; yoloflow's yolo11 is the released architecture, "
           "with SiLU there, and would give other outputs for these weights");
  }

  r.collect(*model, "", 0, out.weights);

  if (const PickleValue* stride = state.get("stride"); stride && stride->kind == K::Tensor) {
    const torch::Tensor s = file.tensor(*stride, out.weights_entry + ".stride");
    // Counted before its values are copied: a YOLO11 has three levels.
    if (s.numel() != 3 || !(s.is_floating_point() || s.scalar_type() == torch::kLong || s.scalar_type() == torch::kInt)) {
      r.fail("holds a model whose stride is a tensor of " + std::to_string(s.numel()) + " " + dtype_name(s.scalar_type()) +
             " values; YOLO11's are [8, 16, 32]");
    }
    const auto d = s.to(torch::kDouble).contiguous();
    out.strides.assign(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
  }
  if (!out.strides.empty() && out.strides != std::vector<double>{8, 16, 32}) {
    r.fail("holds a model with strides " + nlohmann::json(out.strides).dump() + "; YOLO11's are [8, 16, 32]");
  }

  if (const PickleValue* v = root.get("version"); v && v->kind == K::String) out.version = utf8_or_marked(v->s);
  if (const PickleValue* d = root.get("date"); d && d->kind == K::String) out.date = utf8_or_marked(d->s);
  if (const PickleValue* e = root.get("epoch"); e && e->kind == K::Int) out.epoch = e->i;
  const PickleValue* args = root.get("train_args");
  if (!args || args->kind == K::None) args = state.get("args");  // released files: the model's own
  if (args && args->kind != K::None) {
    nlohmann::ordered_json j = pickle_to_json(*args);
    if (j.is_object()) out.train_args = std::move(j);
  }
  if (const PickleValue* m = root.get("train_metrics"); m && m->kind == K::Dict) out.train_metrics = pickle_to_json(*m);
  return out;
}

}  // namespace yoloflow::core
