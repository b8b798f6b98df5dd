#include "training/eval/weights_validation.h"

#include <algorithm>
#include <chrono>

#include <torch/torch.h>

#include "training/detect/nms.h"
#include "runtime/pipeline/component_factory.h"
#include "runtime/pipeline/default_documents.h"
#include "runtime/pipeline/task_components.h"
#include "training/checkpoint/checkpoint_model.h"
#include "training/components/batch_targets.h"
#include "training/eval/validation_batch.h"
#include "training/eval/validation_pipeline.h"
#include "training/device/device_choice.h"
#include "yoloflow/error.h"
#include "yoloflow/log.h"
#include "yoloflow/source.h"

namespace yoloflow::core {

ValidationStages validation_stages(const Registry& registry, const CheckpointModel& described, const std::string& data,
                                   const std::string& split) {
  ValidationStages out;
  std::string source_path;
  const auto [train_name, train_stage] = sink_stage(described.pipeline, "train");
  const json recorded = train_stage.is_object() && train_stage.contains("params") && train_stage["params"].is_object()
                            ? train_stage["params"]
                            : json::object();
  const std::string recorded_path = described.pipeline_origin + ": stages." + train_name + ".params.";
  if (recorded.contains("val_source") && recorded["val_source"].is_object()) {
    out.source = recorded["val_source"];
    source_path = recorded_path + "val_source";
  } else {
    const DefaultDocument& d = train_defaults();
    for (const auto& [name, stage] : d.document.at("stages").items()) {
      if (stage.is_object() && registry.find(Kind::Source, stage.value("plugin", std::string()))) {
        out.source = {{"plugin", stage["plugin"]}, {"params", stage.value("params", json::object())}};
        source_path = d.file + ": stages." + name;
        break;
      }
    }
    if (out.source.is_null()) {
      throw Error(d.file + " (built in) has no stage of a loaded source plugin to read --data with (`yoloflow plugins` "
                  "lists the loaded ones)", kExitPluginError);
    }
  }
  if (!out.source.contains("params") || !out.source["params"].is_object()) out.source["params"] = json::object();
  const std::string plugin = out.source.value("plugin", std::string());
  const RegisteredComponent* rc = registry.find(Kind::Source, plugin);
  if (!rc) {
    throw Error(source_path + ".plugin: no source plugin '" + plugin + "' is loaded (`yoloflow plugins` lists them)",
                kExitPluginError);
  }
  // The reader takes --data and --split through the parameters its schema gives those roles.
  const ParamSpec* data_param = rc->info.schema.find_role(ParamRole::Dataset);
  const ParamSpec* split_param = rc->info.schema.find_role(ParamRole::Split);
  if (!data_param || !split_param) {
    throw InvalidInput(source_path + ".plugin: '" + plugin + "' declares no dataset and split parameters "
                       "(ParamRole::Dataset, ParamRole::Split), through which `yoloflow val` gives it --data and --split");
  }
  out.source["params"][data_param->name] = data;
  out.source["params"][split_param->name] = split;
  const DefaultDocument& d = train_defaults();
  const std::string default_path = d.file + ": stages." + sink_stage(d.document, "train").first + ".params.";
  auto recorded_or_default = [&](const std::string& name, json& spec, std::string& spec_path) {
    if (recorded.contains(name) && recorded[name].is_object()) {
      spec = recorded[name];
      spec_path = recorded_path + name;
    } else {
      spec = train_sink_default(name);
      spec_path = default_path + name;
    }
  };
  recorded_or_default("val_transform", out.transform, out.transform_path);
  recorded_or_default("val_batcher", out.batcher, out.batcher_path);
  recorded_or_default("evaluator", out.evaluator, out.evaluator_path);
  // Weights that record no validation of their own (an Ultralytics checkpoint, a state dict)
  // validate with their model's task's evaluator and mask targets (task-components.json).
  const json params = described.spec.is_object() ? described.spec.value("params", json::object()) : json::object();
  const TaskComponents* task =
      params.contains("task") && params["task"].is_string() ? task_components(params["task"].get<std::string>()) : nullptr;
  if (task != nullptr) {
    if (!recorded.contains("evaluator") && !task->evaluator.empty()) {
      out.evaluator = {{"plugin", task->evaluator}};
      out.evaluator_path = "core/resources/task-components.json: " + task->task + ".evaluator";
    }
    const RegisteredComponent* batcher =
        out.batcher.is_object() ? registry.find(Kind::Batcher, out.batcher.value("plugin", std::string())) : nullptr;
    if (!recorded.contains("val_batcher") && batcher != nullptr && batcher->info.schema.find("masks") != nullptr) {
      out.batcher["params"]["masks"] = task->masks;
    }
  }
  return out;
}

WeightsValidationReport validate_weights(const Registry& registry, const WeightsValidationRequest& r) {
  const torch::Device device = pick_device(r.device, "--device");
  LoadedCheckpointModel loaded = load_checkpoint_model(registry, r.weights, device, "--weights", r.model, "--model");
  Model& model = *loaded.model;
  const int stride = static_cast<int>(largest_stride(model.head()));
  const int wanted = r.imgsz > 0 ? r.imgsz : default_imgsz(loaded);
  WeightsValidationRequest sized = r;
  sized.imgsz = std::max(stride, (wanted + stride - 1) / stride * stride);
  if (sized.imgsz != wanted) {
    YF_LOG_WARN("--imgsz " << wanted << " is not a multiple of the model's stride " << stride << ": using "
                           << sized.imgsz);
  }
  sized.device = device.str();
  // Without --data, the dataset the weights were trained on, as Ultralytics' val reads it.
  if (sized.data.empty()) sized.data = default_data(loaded);
  if (sized.data.empty()) {
    throw InvalidInput("--data is needed: " + r.weights + " names no dataset that exists here (give data=DATA.yaml)");
  }
  return validate_loaded_model(registry, sized, model, loaded.described,
                               loaded.model->architecture() + " (" + loaded.weights_kind + " weights of " + r.weights +
                                   ") on " + device.str());
}

WeightsValidationReport validate_loaded_model(const Registry& registry, const WeightsValidationRequest& r,
                                              Model& model, const CheckpointModel& described,
                                              const std::string& description, int square_height, int square_width) {
  const auto start = std::chrono::steady_clock::now();
  WeightsValidationReport report;
  const torch::Device device = pick_device(r.device, "--device");
  const int nc = model.head().nc;
  report.imgsz = r.imgsz;

  StageContext ctx;
  ctx.node = "--data";
  ctx.imgsz = report.imgsz;
  ctx.device = device.str();
  report.data = r.data;
  ValidationStages stages = validation_stages(registry, described, r.data, r.split);
  stages.nms = {{"conf", r.conf}, {"iou", r.iou}, {"max_det", r.max_det}, {"single_cls", r.single_cls}};
  // classes and single_cls select what the reader reads; a source that cannot is refused.
  const RegisteredComponent* source = registry.find(Kind::Source, stages.source.value("plugin", std::string()));
  auto set_source_param = [&](const char* name, const json& value, const char* option) {
    if (source == nullptr || source->info.schema.find(name) == nullptr) {
      throw InvalidInput(std::string(option) + ": the source '" + stages.source.value("plugin", std::string()) +
                         "' that reads --data has no `" + name + "` parameter");
    }
    stages.source["params"][name] = value;
  };
  if (!r.classes.empty()) set_source_param("classes", r.classes, "--classes");
  if (r.single_cls) set_source_param("single_cls", true, "--single-cls");
  ValidationOptions vo;
  vo.imgsz = report.imgsz;
  vo.batch = r.batch;
  vo.rect = r.rect;
  vo.stop_flag = r.stop_flag;
  vo.height = square_height;
  vo.width = square_width;
  ValidationPipeline validation(registry, stages, vo, ctx, "yoloflow val");
  report.names = validation.names();
  // As one class (single_cls), the labels of any dataset meet any model's detections as class 0.
  if (static_cast<int>(report.names.size()) != nc && !r.single_cls) {
    throw InvalidInput("--data " + r.data + " names " + std::to_string(report.names.size()) + " classes, but --weights " +
                       r.weights + " detects " + std::to_string(nc) + ": validate on the dataset the weights were trained for");
  }
  if (validation.size() == 0) throw InvalidInput("--data " + r.data + ": split '" + r.split + "' has no usable images");
  report.description = description;
  YF_LOG_INFO("val: validating " << validation.size() << " images of split '" << r.split << "' with " << report.description);

  std::vector<KeptDetections> kept;
  if (r.plots) report.plots = std::make_shared<ValPlots>(report.names, r.conf);
  const ValidationResult run =
      validation.run(model, nullptr, nullptr, device, r.keep_predictions ? &kept : nullptr, report.plots.get());
  report.evaluation = run.evaluation;
  report.table = run.table;
  report.times = run.times;  // Ultralytics' speed line
  report.batches = validation.batches();
  report.interrupted = validation.interrupted();
  for (const KeptDetections& k : kept) {
    // Back through the transform and the source's resize: original = (x - pad) / ratio.
    const Geometry& g = k.sample.geometry;
    OriginalImageDetections d;
    d.path = k.sample.path;
    d.width = g.original_width;
    d.height = g.original_height;
    const auto boxes = k.boxes.to(torch::kFloat).contiguous();
    const auto a = boxes.accessor<float, 2>();
    for (std::int64_t j = 0; j < boxes.size(0); ++j) {
      auto clip = [](double v, int hi) { return static_cast<float>(std::clamp(v, 0.0, static_cast<double>(hi))); };
      d.boxes.push_back({clip((a[j][0] - g.pad_x) / g.ratio_x, d.width), clip((a[j][1] - g.pad_y) / g.ratio_y, d.height),
                         clip((a[j][2] - g.pad_x) / g.ratio_x, d.width), clip((a[j][3] - g.pad_y) / g.ratio_y, d.height),
                         a[j][4], a[j][5]});
    }
    d.mask_rles = k.mask_rles;
    report.predictions.push_back(std::move(d));
  }
  report.skipped = validation.skipped();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace yoloflow::core
