#include "training/step/train_setup.h"

#include "training/model/torch_file.h"
#include "training/model/ultralytics_checkpoint.h"
#include "training/model/weights_io.h"
#include "runtime/pipeline/component_factory.h"
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

void load_initial_weights(Model& model, const std::string& file, const std::vector<std::string>& names,
                          const std::string& json_path) {
  NamedTensors weights;
  std::string from = file;
  std::vector<std::string> file_names;
  try {
    TorchFile f = TorchFile::open(file);
    if (is_ultralytics_checkpoint(f.root())) {
      UltralyticsCheckpoint u = read_ultralytics_checkpoint(f);
      check_finite(u.weights, f.name(), u.weights_entry);
      if (u.architecture() != model.architecture()) {
        throw InvalidInput(f.name() + " holds a " + u.architecture() + " (an Ultralytics checkpoint), the model is a " +
                           model.architecture() + ": train with model=" + file +
                           " to take the architecture from the file, or model=" + u.architecture());
      }
      from = file + " (an Ultralytics" + (u.version.empty() ? "" : " " + u.version) + " checkpoint, its " +
             u.weights_entry + ")";
      file_names = std::move(u.names);
      weights = std::move(u.weights);
    } else {
      weights = read_weights(f);
    }
  } catch (const std::exception& e) {
    throw InvalidInput(json_path + ": " + e.what());
  }
  const int nc = static_cast<int>(names.size());
  LoadOptions options;
  const int file_nc = classes_in(weights);
  if (file_nc > 0 && file_nc != nc) options.may_differ = is_class_head_tensor;
  const auto report = load_weights(model.module(), weights, file, options);
  YF_LOG_INFO("weights: " << report.loaded << "/" << weights.size() << " tensors from " << from
                          << (report.kept_initial.empty()
                                  ? std::string()
                                  : "; class head (" + std::to_string(report.kept_initial.size()) +
                                        " tensors) kept initial: " + std::to_string(file_nc) + " classes in the file, " +
                                        std::to_string(nc) + " in the dataset"));
  // The same count under other names: the head's outputs are trained to mean the dataset's
  // classes, which is what fine-tuning does; said, since it may not be meant.
  if (static_cast<int>(file_names.size()) == nc && file_names != names) {
    std::size_t differ = 0, first = 0;
    for (std::size_t c = names.size(); c-- > 0;) {
      if (file_names[c] != names[c]) {
        ++differ;
        first = c;
      }
    }
    YF_LOG_WARN("weights: " << differ << " of the " << nc << " classes are named otherwise in " << file
                            << " than in the dataset (class " << first << ": '" << file_names[first] << "' there, '"
                            << names[first] << "' here); training follows the dataset's names");
  }
}

std::string no_validation_source_message() {
  return "no source to validate from: the pipeline has no single source stage whose schema declares a split parameter; name one "
         "here, e.g. {\"plugin\": \"...\", \"params\": {...}} reading the validation images";
}

std::unique_ptr<ValidationPipeline> open_training_validation(const Registry& registry, const Params& p,
                                                             const StageContext& ctx) {
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
  stages.evaluator = p.get_json("evaluator");
  stages.evaluator_path = p.where() + ".evaluator";
  ValidationOptions vo;
  vo.imgsz = ctx.imgsz;
  vo.batch = p.get_int("val_batch");
  vo.rect = p.get_bool("rect");
  // Made (and checked) now rather than at the first validation, an epoch into the run.
  auto validation = std::make_unique<ValidationPipeline>(registry, stages, vo, ctx, p.where() + ".validation");
  const json source_params = source_spec.value("params", json::object());
  YF_LOG_INFO("validation: " << validation->size() << " images from " << source_spec.value("plugin", std::string())
                             << (source_params.contains("split") ? ", split " + source_params["split"].dump() : std::string()));
  return validation;
}

}  // namespace yoloflow::core
