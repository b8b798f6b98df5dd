// Reading an Ultralytics checkpoint: which model entry holds the weights, what checks it is a
// YOLO11 the yolo11 plugin builds, and what the file says of itself. The module tree walk is
// ultralytics_module_tree.h, the architecture check ultralytics_yaml.h.
#include "training/model/ultralytics_checkpoint.h"

#include <utility>

#include "runtime/pipeline/architecture_name.h"
#include "runtime/pipeline/default_documents.h"
#include "runtime/util/string_affixes.h"
#include "training/model/ultralytics_module_tree.h"
#include "training/model/ultralytics_yaml.h"
#include "yoloflow/error.h"

namespace yoloflow::core {
namespace {

using K = PickleValue::Kind;

// The part of a class name after its module: "ultralytics.nn.modules.block.SPPF" -> "SPPF".
std::string short_class(const std::string& cls) { return cls.substr(cls.rfind('.') + 1); }

// Throws InvalidInput naming the file, as every refusal of a checkpoint reads.
struct Refusal {
  const std::string& file_name;
  [[noreturn]] void operator()(const std::string& what) const { throw InvalidInput(file_name + " " + what); }
};

std::vector<std::string> class_names(const PickleValue* names, int nc, const Refusal& fail) {
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
        fail("names its classes with keys other than 0.." + std::to_string(out.size() - 1));
      }
      seen[index->i] = true;
      out[index->i] = text(names->items[k + 1]);
    }
  } else {
    fail("has class names that are " + names->describe());
  }
  if (static_cast<int>(out.size()) != nc) {
    fail("names " + std::to_string(out.size()) + " classes, but its model has nc " + std::to_string(nc));
  }
  return out;
}

}  // namespace

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
  const Refusal fail{file.name()};
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
    fail("is an Ultralytics checkpoint whose '" + out.weights_entry + "' entry is " +
         (model ? model->describe() : std::string("missing")) +
         (entry.empty() ? "" : "; its weights are under '" + std::string(out.weights_entry == "ema" ? "model" : "ema") + "'"));
  }
  out.model_class = model->s;
  if (!model->state || model->state->kind != K::Dict) fail("is an Ultralytics checkpoint whose model has no pickled state");
  const PickleValue& state = *model->state;
  const bool segmentation = ends_with(model->s, ".SegmentationModel");
  if (!ends_with(model->s, ".DetectionModel") && !segmentation) {
    const PickleValue* args = state.get("args");
    const PickleValue* task = args && args->kind == K::Dict ? args->get("task") : nullptr;
    fail("holds an Ultralytics " + short_class(model->s) +
         (task && task->kind == K::String ? " (task " + task->s + ")" : std::string()) +
         "; yoloflow reads YOLO11 detection and segmentation models (DetectionModel, SegmentationModel)");
  }
  const PickleValue* yaml = state.get("yaml");
  if (!yaml || yaml->kind != K::Dict) fail("holds a " + short_class(model->s) + " without the yaml it was built from");
  Yolo11Yaml architecture = check_yolo11_yaml(*yaml, file.name());
  out.scale = std::move(architecture.scale);
  out.task = std::move(architecture.task);
  out.multiples = std::move(architecture.multiples);
  if (segmentation != (out.task == "segment")) {
    fail("holds a " + short_class(model->s) + " whose yaml's head is " + (segmentation ? "Detect" : "Segment") +
         "; a DetectionModel has a Detect head, a SegmentationModel a Segment head");
  }

  const PickleValue* nc = state.get("nc");
  if (!nc || nc->kind != K::Int) nc = yaml->get("nc");
  if (!nc || nc->kind != K::Int || nc->i <= 0 || nc->i > 1000000) fail("does not say how many classes its model has (nc)");
  out.nc = static_cast<int>(nc->i);
  out.names = class_names(state.get("names"), out.nc, fail);

  // Released YOLO11 weights have SiLU after SPPF's first conv, and so does the yolo11 plugin;
  // Ultralytics 8.4 builds SPPF from yolo11.yaml without it (Conv(..., act=False)), which gives
  // other outputs for the same weights.
  const PickleValue* sequence = ultralytics_child_module(model, "model");
  const PickleValue* sppf = ultralytics_child_module(sequence, "9");
  const PickleValue* act = ultralytics_child_module(ultralytics_child_module(sppf, "cv1"), "act");
  if (!sppf || !ends_with(sppf->s, ".SPPF")) fail("holds a YOLO11 model whose layer 9 is not an SPPF module");
  if (!act || !ends_with(act->s, ".SiLU")) {
    fail("holds a YOLO11 model whose SPPF (layer 9) has " + (act ? short_class(act->s) : std::string("nothing")) +
         " after its first conv, as Ultralytics 8.4 builds it; yoloflow's yolo11 is the released architecture, "
         "with SiLU there, and would give other outputs for these weights");
  }

  out.weights = ultralytics_state_dict(file, *model);

  if (const PickleValue* stride = state.get("stride"); stride && stride->kind == K::Tensor) {
    const torch::Tensor s = file.tensor(*stride, out.weights_entry + ".stride");
    // Counted before its values are copied: a YOLO11 has three levels.
    if (s.numel() != 3 || !(s.is_floating_point() || s.scalar_type() == torch::kLong || s.scalar_type() == torch::kInt)) {
      fail("holds a model whose stride is a tensor of " + std::to_string(s.numel()) + " " + dtype_name(s.scalar_type()) +
           " values; YOLO11's are [8, 16, 32]");
    }
    const auto d = s.to(torch::kDouble).contiguous();
    out.strides.assign(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
  }
  if (!out.strides.empty() && out.strides != std::vector<double>{8, 16, 32}) {
    fail("holds a model with strides " + nlohmann::json(out.strides).dump() + "; YOLO11's are [8, 16, 32]");
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
