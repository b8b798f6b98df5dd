#include "predict/predictor.h"
#include "predict/checkpoint_model.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <opencv2/imgproc.hpp>
#include <torch/torch.h>

#include "detect/nms.h"
#include "model/model_factory.h"
#include "model/torch_file.h"
#include "model/ultralytics_checkpoint.h"
#include "model/weights_io.h"
#include "pipeline/component_factory.h"
#include "pipeline/default_documents.h"
#include "plugin/registry.h"
#include "train/checkpoint.h"
#include "train/guarded_components.h"
#include "util/device_choice.h"
#include "yoloflow/augmentation.h"
#include "yoloflow/error.h"
#include "yoloflow/model.h"
#include "yoloflow/rng.h"

namespace yoloflow::core {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

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

// Letterbox and mosaic-style augmentations ask for other samples; predict has none.
class NoSamples final : public SampleLoader {
 public:
  std::size_t size() const override { return 0; }
  Sample load(std::size_t) override { throw Error("predict: no other samples to load"); }
};

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

// How `yoloflow predict` prepares an image: the augmentation stages on the path from the source
// to the predict sink of predict-defaults.json, in order, each configured at the network's
// image size, and given the model's largest stride as a `stride` parameter it declares and the
// file leaves out.
std::vector<std::unique_ptr<Augmentation>> prediction_transforms(const Registry& registry, int stride,
                                                                  const StageContext& context) {
  const DefaultDocument& d = predict_defaults();
  const json& stages = d.document.at("stages");
  std::vector<std::string> chain;  // from the sink back to the source
  std::string name = sink_stage(d.document, "predict").first;
  while (!name.empty() && stages.contains(name) && chain.size() <= stages.size()) {
    chain.push_back(name);
    const json& stage = stages[name];
    name = stage.contains("input") && stage["input"].is_string() ? stage["input"].get<std::string>() : std::string();
  }
  std::vector<std::unique_ptr<Augmentation>> out;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const json& stage = stages[*it];
    const auto* rc = registry.find(Kind::Augmentation, stage.value("plugin", std::string()));
    if (!rc) continue;  // the source, the batcher, the sink
    json params = stage.contains("params") && stage["params"].is_object() ? stage["params"] : json::object();
    if (rc->info.schema.find("stride") && !params.contains("stride")) params["stride"] = stride;
    StageContext ctx = context;
    ctx.node = d.file + ": stages." + *it;
    out.emplace_back(static_cast<Augmentation*>(
        create_configured(registry, Kind::Augmentation, rc->info.name, params, ctx.node, ctx).release()));
  }
  if (out.empty()) {
    throw Error(d.file + " (built in): no stage of a loaded augmentation plugin leads to its predict stage, so "
                "images could not be fitted to the network (`yoloflow plugins` lists the loaded ones)",
                kExitPluginError);
  }
  return out;
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
  } else if (std::ifstream f(run_pipeline); f) {
    try {
      out.pipeline = json::parse(f);
      out.pipeline_origin = run_pipeline.string();
    } catch (const std::exception&) {
      pipeline_problem = "no 'pipeline' entry, and " + run_pipeline.string() + " is not valid JSON";
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
    // As a checkpoint's model entry would say it ("yolo11n" is plugin yolo11, scale n).
    out.described.spec = registry.find(Kind::Model, architecture)
                             ? json{{"plugin", architecture}, {"params", {{"nc", nc}}}}
                             : json{{"plugin", architecture.substr(0, architecture.size() - 1)},
                                    {"params", {{"scale", architecture.substr(architecture.size() - 1)}, {"nc", nc}}}};
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

int default_imgsz(const LoadedCheckpointModel& loaded) {
  const auto& a = loaded.about;
  if (a.contains("train_args") && a["train_args"].contains("imgsz") && a["train_args"]["imgsz"].is_number_integer()) {
    const int imgsz = a["train_args"]["imgsz"].get<int>();
    if (imgsz >= 32 && imgsz <= 8192) return imgsz;
  }
  return 640;
}

struct Predictor::Impl {
  LoadedCheckpointModel loaded;
  Model* model = nullptr;
  std::vector<std::unique_ptr<Augmentation>> transforms;  // predict-defaults.json's, in order
  torch::Device device{torch::kCPU};
  NmsOptions nms;
  torch::Tensor class_mask;  // (nc) 1 for the kept classes; undefined = all
  int imgsz = 640;

  // Network, NMS and the letterbox undone, for letterboxed RGB pixels (N, H, W, 3) uint8.
  std::vector<ImagePrediction> detect(const torch::Tensor& pixels, const std::vector<Geometry>& geometry);
};

Predictor::Predictor(const Registry& registry, const std::string& weights, const PredictOptions& options)
    : impl_(std::make_unique<Impl>()) {
  auto& m = *impl_;
  m.device = pick_device(options.device, options.option_prefix + "device");
  m.loaded = load_checkpoint_model(registry, weights, m.device, options.option_prefix + "weights", options.model,
                                   options.option_prefix + "model");
  m.model = m.loaded.model.get();
  const DetectionHead head = m.model->head();
  for (int c : options.classes) {
    if (c < 0 || c >= head.nc) {
      throw InvalidInput(options.option_prefix + "classes: " + std::to_string(c) + " is not a class of this model (0.." +
                         std::to_string(head.nc - 1) + ")");
    }
  }
  if (!options.classes.empty()) {
    m.class_mask = torch::zeros({head.nc});
    for (int c : options.classes) m.class_mask[c] = 1.0f;
    m.class_mask = m.class_mask.to(m.device);
  }
  const int stride = head.strides.empty()
                         ? 32
                         : static_cast<int>(*std::max_element(head.strides.begin(), head.strides.end()));
  const int wanted = options.imgsz > 0 ? options.imgsz : default_imgsz(m.loaded);
  m.imgsz = std::max(stride, (wanted + stride - 1) / stride * stride);
  StageContext ctx;
  ctx.node = "predict";
  ctx.device = m.device.str();
  ctx.imgsz = m.imgsz;
  m.transforms = prediction_transforms(registry, stride, ctx);
  m.nms.conf = options.conf;
  m.nms.iou = options.iou;
  m.nms.max_det = options.max_det;
}

Predictor::~Predictor() = default;

const std::vector<std::string>& Predictor::names() const { return impl_->loaded.described.names; }
int Predictor::imgsz() const { return impl_->imgsz; }

std::string Predictor::description() const {
  std::ostringstream os;
  os << impl_->model->architecture() << " (" << impl_->model->head().nc << " classes, " << impl_->loaded.weights_kind
     << " weights) on " << impl_->device.str() << ", imgsz " << impl_->imgsz;
  return os.str();
}

ImagePrediction Predictor::predict(const cv::Mat& image) {
  auto& m = *impl_;
  if (image.empty() || image.type() != CV_8UC3) throw InvalidInput("predict: needs an 8-bit 3-channel image");
  const auto t0 = Clock::now();
  Sample s;
  s.image = image;
  s.geometry.original_width = image.cols;
  s.geometry.original_height = image.rows;
  Rng rng(0);
  NoSamples loader;
  AugmentContext ac{rng, loader, m.imgsz, 0};
  for (auto& t : m.transforms) t->apply(s, ac);
  const int h = s.image.rows, w = s.image.cols;
  auto pixels = torch::empty({1, h, w, 3}, torch::kUInt8);
  cv::Mat rgb(h, w, CV_8UC3, pixels.data_ptr<std::uint8_t>());
  cv::cvtColor(s.image, rgb, cv::COLOR_BGR2RGB);
  const double preprocess = ms_since(t0);
  ImagePrediction out = m.detect(pixels, {s.geometry}).at(0);
  out.preprocess_ms = preprocess;
  return out;
}

std::vector<ImagePrediction> Predictor::predict_batch(const Batch& batch) {
  if (batch.size <= 0) return {};
  const auto t0 = Clock::now();
  // The batch's pixels stay where the batcher put them: the tensor is a view.
  auto pixels = torch::from_blob(batch.pixels.get(), {batch.size, batch.height, batch.width, 3}, torch::kUInt8);
  std::vector<Geometry> geometry;
  for (const auto& s : batch.samples) geometry.push_back(s.geometry);
  const double preprocess = ms_since(t0) / static_cast<double>(batch.size);
  auto out = impl_->detect(pixels, geometry);
  for (auto& p : out) p.preprocess_ms = preprocess;
  return out;
}

std::vector<ImagePrediction> Predictor::Impl::detect(const torch::Tensor& pixels, const std::vector<Geometry>& geometry) {
  torch::NoGradGuard no_grad;
  const std::int64_t n = pixels.size(0);
  auto t0 = Clock::now();
  auto x = pixels.to(device).permute({0, 3, 1, 2}).to(torch::kFloat).div_(255.0);
  Detections det = model->decode(model->forward_train(x));
  if (device.is_cuda()) torch::cuda::synchronize();  // the time of the work, not of its launch
  const double inference = ms_since(t0) / static_cast<double>(n);

  t0 = Clock::now();
  if (class_mask.defined()) det.scores = det.scores * class_mask;  // other classes never pass conf
  const std::vector<torch::Tensor> kept = non_max_suppression(det, nms);
  std::vector<ImagePrediction> out(static_cast<std::size_t>(n));
  for (std::int64_t k = 0; k < n; ++k) {
    ImagePrediction& p = out[static_cast<std::size_t>(k)];
    // Letterbox geometry back to the original pixels: original = (input - pad) / ratio.
    const Geometry& g = geometry.at(static_cast<std::size_t>(k));
    p.width = g.original_width;
    p.height = g.original_height;
    const auto a = kept[static_cast<std::size_t>(k)].accessor<float, 2>();
    for (std::int64_t i = 0; i < a.size(0); ++i) {
      Detection d;
      auto map = [](float v, double pad, double ratio, int limit) {
        return static_cast<float>(std::clamp((v - pad) / ratio, 0.0, static_cast<double>(limit)));
      };
      d.x1 = map(a[i][0], g.pad_x, g.ratio_x, p.width);
      d.y1 = map(a[i][1], g.pad_y, g.ratio_y, p.height);
      d.x2 = map(a[i][2], g.pad_x, g.ratio_x, p.width);
      d.y2 = map(a[i][3], g.pad_y, g.ratio_y, p.height);
      d.confidence = a[i][4];
      d.cls = static_cast<int>(a[i][5]);
      p.detections.push_back(d);
    }
    p.inference_ms = inference;
  }
  const double postprocess = ms_since(t0) / static_cast<double>(n);
  for (auto& p : out) p.postprocess_ms = postprocess;
  return out;
}

}  // namespace yoloflow::core
