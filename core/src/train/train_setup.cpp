#include "train/train_setup.h"

#include <fstream>

#include "model/weights_io.h"
#include "pipeline/component_factory.h"
#include "plugin/host_registry.h"
#include "yoloflow/error.h"
#include "yoloflow/log.h"
#include "yoloflow/source.h"

namespace yoloflow::core {

json model_spec_for_dataset(const Params& p, int dataset_nc) {
  json spec = p.get_json("model");
  if (!spec.contains("params") || !spec["params"].is_object()) spec["params"] = json::object();
  auto& nc = spec["params"]["nc"];
  // (Resolution fills in the plugin's default, 0 = automatic.)
  if (nc.is_null() || (nc.is_number_integer() && nc.get<int>() == 0)) {
    nc = dataset_nc;
  } else if (nc.is_number_integer() && nc.get<int>() != dataset_nc) {
    throw InvalidInput(p.where() + ".model.params.nc: " + std::to_string(nc.get<int>()) + " classes, but " +
                       p.get_string("data") + " names " + std::to_string(dataset_nc) +
                       "; remove nc (it follows the dataset) or make them agree");
  }
  return spec;
}

void load_initial_weights(Model& model, const std::string& file, int nc, const std::string& json_path) {
  NamedTensors weights;
  try {
    weights = read_weights(file);
  } catch (const std::exception& e) {
    throw InvalidInput(json_path + ": " + e.what());
  }
  LoadOptions options;
  const int file_nc = classes_in(weights);
  if (file_nc > 0 && file_nc != nc) options.may_differ = is_class_head_tensor;
  const auto report = load_weights(model.module(), weights, file, options);
  YF_LOG_INFO("weights: " << report.loaded << "/" << weights.size() << " tensors from " << file
                          << (report.kept_initial.empty()
                                  ? std::string()
                                  : "; class head (" + std::to_string(report.kept_initial.size()) +
                                        " tensors) kept initial: " + std::to_string(file_nc) + " classes in the file, " +
                                        std::to_string(nc) + " in the dataset"));
}

std::string no_validation_source_message() {
  return "no source to validate from: the pipeline has no single source stage with a `split` parameter; name one "
         "here, e.g. {\"plugin\": \"...\", \"params\": {...}} reading the validation images";
}

std::unique_ptr<ValidationPipeline> open_training_validation(const Params& p, const StageContext& ctx) {
  const json source_spec = p.get_json("val_source");
  if (source_spec.is_null()) {
    throw InvalidInput(p.where() + ".val_source: " + no_validation_source_message());
  }
  ValidationStages stages;
  stages.source = source_spec;
  stages.transform = p.get_json("val_transform");
  stages.batcher = p.get_json("val_batcher");
  stages.transform_path = p.where() + ".val_transform";
  stages.batcher_path = p.where() + ".val_batcher";
  stages.nms = {{"conf", p.get_float("val_conf")}, {"iou", p.get_float("val_iou")}, {"max_det", p.get_int("max_det")}};
  ValidationOptions vo;
  vo.imgsz = ctx.imgsz;
  vo.batch = p.get_int("val_batch");
  vo.rect = p.get_bool("rect");
  // Made (and checked) now rather than at the first validation, an epoch into the run.
  auto validation = std::make_unique<ValidationPipeline>(host_registry(), stages, vo, ctx, p.where() + ".validation");
  const json source_params = source_spec.value("params", json::object());
  YF_LOG_INFO("validation: " << validation->size() << " images from " << source_spec.value("plugin", std::string())
                             << (source_params.contains("split") ? ", split " + source_params["split"].dump() : std::string()));
  return validation;
}

json read_run_pipeline(const std::string& run_dir) {
  std::ifstream f(run_dir + "/pipeline.json");
  if (!f) return json();
  try {
    return json::parse(f);
  } catch (const std::exception& e) {
    YF_LOG_WARN("train: " << run_dir << "/pipeline.json is not valid JSON (" << e.what()
                          << "); checkpoints will not hold the pipeline");
    return json();
  }
}

}  // namespace yoloflow::core
