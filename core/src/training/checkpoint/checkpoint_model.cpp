#include "training/checkpoint/checkpoint_model.h"

#include <filesystem>
#include <fstream>

#include "training/model/model_factory.h"
#include "training/model/torch_file.h"
#include "training/model/ultralytics_checkpoint.h"
#include "training/model/weights_io.h"
#include "runtime/pipeline/architecture_name.h"
#include "runtime/pipeline/component_origin.h"
#include "runtime/plugin/registry.h"
#include "training/checkpoint/checkpoint.h"
#include "training/components/guarded_components.h"
#include "yoloflow/error.h"
#include "runtime/pipeline/json_text.h"
#include "runtime/util/file_checks.h"

namespace yoloflow::core {
namespace {

namespace fs = std::filesystem;

// The model spec of the train sink in a resolved pipeline document; null when it has none.
json train_model_in(const json& pipeline) {
  if (!pipeline.is_object() || !pipeline.contains("stages") || !pipeline["stages"].is_object()) return json();
  for (const auto& [name, stage] : pipeline["stages"].items()) {
    if (stage.is_object() && stage.value("plugin", std::string()) == "train" && stage.contains("params") &&
        stage["params"].is_object() && stage["params"].contains("model")) {
      return stage["params"]["model"];
    }
  }
  return json();
}

// The head's class count follows the dataset unless the pipeline set it: the checkpoint's nc.
json with_nc(json spec, const json& meta) {
  if (!spec.contains("params") || !spec["params"].is_object()) spec["params"] = json::object();
  if (!spec["params"].contains("nc") && meta.contains("nc")) spec["params"]["nc"] = meta["nc"];
  return spec;
}

// On the device, in eval mode, every class named ("7" for an unnamed class 7).
void finish_loaded(LoadedCheckpointModel& out, const torch::Device& device, const std::string& weights) {
  out.model->module().to(device);
  out.model->module().eval();
  const int nc = out.model->head().nc;
  auto& names = out.described.names;
  if (!names.empty() && static_cast<int>(names.size()) != nc) {
    throw InvalidInput(weights + ": names " + std::to_string(names.size()) + " classes, its model has nc=" +
                       std::to_string(nc));
  }
  for (int c = static_cast<int>(names.size()); c < nc; ++c) names.push_back(std::to_string(c));
}

}  // namespace

CheckpointModel describe_checkpoint_model(const json& meta, const std::string& checkpoint_path) {
  CheckpointModel out;
  if (meta.contains("names") && meta["names"].is_array()) {
    for (const auto& n : meta["names"]) out.names.push_back(n.is_string() ? n.get<std::string>() : n.dump());
  }
  // Checkpoints written before the pipeline was stored: the run folder's pipeline.json.
  const fs::path run_pipeline = fs::path(checkpoint_path).parent_path().parent_path() / "pipeline.json";
  std::string pipeline_problem = "no 'pipeline' entry, and " + run_pipeline.string() + " does not exist";
  if (meta.contains("pipeline") && meta["pipeline"].is_object()) {
    out.pipeline = meta["pipeline"];
    out.pipeline_origin = checkpoint_path + " (its pipeline entry)";
  } else if (std::error_code ec; fs::exists(run_pipeline, ec)) {
    // Read as every pipeline file is: bounded in size, strict JSON (runtime/pipeline/json_text.h).
    Diagnostics problems;
    try {
      if (parse_json_text(read_regular_file(run_pipeline.string(), kMaxPipelineBytes, "cannot read pipeline"),
                          out.pipeline, problems)) {
        out.pipeline_origin = run_pipeline.string();
      } else {
        pipeline_problem = "no 'pipeline' entry, and " + run_pipeline.string() + " cannot be read: " +
                           (problems.front().path.empty() ? "" : problems.front().path + ": ") + problems.front().message;
      }
    } catch (const Error& e) {
      pipeline_problem = "no 'pipeline' entry, and " + std::string(e.what());
    }
  }
  if (meta.contains("model") && meta["model"].is_object() && meta["model"].contains("plugin")) {
    out.spec = with_nc(meta["model"], meta);
    out.origin = checkpoint_path + " (its model entry)";
    return out;
  }
  if (json m = train_model_in(out.pipeline); !m.is_null()) {
    out.spec = with_nc(m, meta);
    out.origin = out.pipeline_origin;
    return out;
  }
  if (!out.pipeline.is_null()) pipeline_problem = out.pipeline_origin + " has no train stage with a model";
  if (meta.contains("architecture") && meta["architecture"].is_string() && meta.contains("nc")) {
    // "yolo11n": the plugin name and its scale letter, what the sink's model reports.
    const std::string arch = meta["architecture"].get<std::string>();
    out.spec = {{"plugin", arch.substr(0, arch.size() - 1)},
                {"params", {{"scale", arch.substr(arch.size() - 1)}, {"nc", meta["nc"]}}}};
    out.origin = checkpoint_path + " (its architecture name " + arch + ")";
    return out;
  }
  throw InvalidInput(checkpoint_path + " does not say which model it holds: no 'model' entry (written by an older "
                     "yoloflow), " + pipeline_problem + "; predict with a checkpoint from `yoloflow train`, "
                     "kept in its run folder (RUN/weights/best.pt beside RUN/pipeline.json)");
}

LoadedCheckpointModel load_checkpoint_model(const Registry& registry, const std::string& weights,
                                            const torch::Device& device, const std::string& option,
                                            const std::string& architecture, const std::string& architecture_option) {
  LoadedCheckpointModel out;
  if (!fs::exists(weights)) throw InvalidInput(option + " " + weights + ": no such file");
  if (fs::is_directory(weights)) {
    throw InvalidInput(option + " " + weights + ": is a folder; give a checkpoint such as " + weights +
                       "/weights/best.pt");
  }
  // One read of the file, checked (torch_file.h), then what it holds: a checkpoint of
  // `yoloflow train`, an Ultralytics checkpoint, or a plain state dict.
  TorchFile file = TorchFile::open(weights, option + " " + weights);
  if (is_ultralytics_checkpoint(file.root())) {
    UltralyticsCheckpoint u = read_ultralytics_checkpoint(file);
    check_finite(u.weights, file.name(), u.weights_entry);
    if (!architecture.empty() && architecture != u.architecture()) {
      throw InvalidInput(architecture_option + " " + architecture + ", but " + file.name() + " holds a " +
                         u.architecture() + " (an Ultralytics checkpoint says its model itself): leave " +
                         architecture_option + " out");
    }
    out.model = create_model(registry, u.architecture(), u.nc);
    out.described.spec = u.model_spec();
    out.described.names = u.names;
    out.described.origin = weights + " (an Ultralytics" + (u.version.empty() ? "" : " " + u.version) + " checkpoint)";
    out.weights_kind = u.weights_entry == "ema" ? "Ultralytics EMA" : "Ultralytics";
    out.about = {{"format", "ultralytics"}, {"entry", u.weights_entry}, {"version", u.version}, {"date", u.date},
                 {"train_args", u.train_args}, {"train_metrics", u.train_metrics}};
    if (u.epoch) out.about["epoch"] = *u.epoch;
    if (!u.weights.empty()) out.about["dtype"] = c10::toString(u.weights.front().second.scalar_type());
    load_weights(out.model->module(), u.weights, weights);
    finish_loaded(out, device, weights);
    return out;
  }
  if (!is_yoloflow_checkpoint(file)) {
    NamedTensors state = read_weights(file);
    if (architecture.empty()) {
      throw InvalidInput(option + " " + weights + ": a plain state dict does not say which model it holds; name it with " +
                         architecture_option + " (e.g. yolo11n)");
    }
    const int nc = classes_in(state);
    if (nc <= 0) {
      throw InvalidInput(option + " " + weights + ": no detection head's class branch (model.<N>.cv3.0.2.bias) in this "
                         "state dict, so it holds no YOLO detector");
    }
    auto model = create_model(registry, architecture, nc);
    // As a checkpoint's model entry would say it ("yolo11n-seg" is plugin yolo11, scale n,
    // task segment); create_model has read the name.
    const ArchitectureName name = *parse_architecture(registry, architecture);
    json params = architecture_params(name);
    params["nc"] = nc;
    out.described.spec = json{{"plugin", name.plugin}, {"params", params}};
    out.described.origin = architecture_option + " " + architecture;
    // Made, so the plugin the spec names is registered.
    out.model = guard_component(std::move(model),
                                component_origin(*registry.find(Kind::Model, out.described.spec.at("plugin").get<std::string>()),
                                                 "model of " + out.described.origin));
    out.weights_kind = "state dict";
    out.about = {{"format", "state dict"}};
    if (!state.empty()) out.about["dtype"] = c10::toString(state.front().second.scalar_type());
    load_weights(out.model->module(), state, weights);  // names every tensor that does not fit
    finish_loaded(out, device, weights);
    return out;
  }
  const Checkpoint ck = read_checkpoint(file);
  out.described = describe_checkpoint_model(ck.meta, weights);
  StageContext ctx;
  ctx.node = "model of " + out.described.origin;
  ctx.device = device.str();
  const std::string plugin = out.described.spec.value("plugin", std::string());
  if (!registry.find(Kind::Model, plugin)) {
    throw Error(weights + " holds a '" + plugin + "' model, but no model plugin of that name is loaded "
                "(check `yoloflow plugins`)", kExitPluginError);
  }
  out.model = create_guarded<Model>(registry, Kind::Model, out.described.spec, ctx.node, ctx);
  // Ultralytics' best.pt is its EMA: what validation measured.
  const TensorList& tensors = ck.ema.empty() ? ck.model : ck.ema;
  out.weights_kind = ck.ema.empty() ? "raw" : "EMA";
  out.about = {{"format", "yoloflow"}, {"epoch", ck.epoch}, {"global_step", ck.global_step},
               {"best_fitness", ck.best_fitness}};
  if (!tensors.empty()) out.about["dtype"] = c10::toString(tensors.front().second.scalar_type());
  load_weights(out.model->module(), tensors, weights);
  finish_loaded(out, device, weights);
  return out;
}

}  // namespace yoloflow::core
