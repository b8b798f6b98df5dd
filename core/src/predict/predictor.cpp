#include "predict/predictor.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <opencv2/imgproc.hpp>
#include <torch/torch.h>

#include "detect/nms.h"
#include "model/weights_io.h"
#include "pipeline/component_factory.h"
#include "plugin/registry.h"
#include "train/checkpoint.h"
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

torch::Device pick_device(const std::string& wanted) {
  if (wanted.empty() || wanted == "auto") {
    return torch::cuda::is_available() ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);
  }
  try {
    torch::Device d(wanted);
    if (d.is_cuda() && !torch::cuda::is_available()) {
      throw InvalidInput("--device " + wanted + ": LibTorch sees no CUDA device (use --device cpu)");
    }
    return d;
  } catch (const c10::Error&) {
    throw InvalidInput("--device " + wanted + ": not a device (cpu, cuda or cuda:N)");
  }
}

// Letterbox and mosaic-style augmentations ask for other samples; predict has none.
class NoSamples final : public SampleLoader {
 public:
  std::size_t size() const override { return 0; }
  Sample load(std::size_t) override { throw Error("predict: no other samples to load"); }
};

}  // namespace

CheckpointModel describe_checkpoint_model(const json& meta, const std::string& checkpoint_path) {
  CheckpointModel out;
  if (meta.contains("names") && meta["names"].is_array()) {
    for (const auto& n : meta["names"]) out.names.push_back(n.is_string() ? n.get<std::string>() : n.dump());
  }
  if (meta.contains("model") && meta["model"].is_object() && meta["model"].contains("plugin")) {
    out.spec = with_nc(meta["model"], meta);
    out.origin = checkpoint_path + " (its model entry)";
    return out;
  }
  if (json m = train_model_in(meta.value("pipeline", json())); !m.is_null()) {
    out.spec = with_nc(m, meta);
    out.origin = checkpoint_path + " (its pipeline entry)";
    return out;
  }
  // Checkpoints written before the pipeline was stored: the run folder's pipeline.json.
  const fs::path run_pipeline = fs::path(checkpoint_path).parent_path().parent_path() / "pipeline.json";
  std::string pipeline_problem = run_pipeline.string() + " does not exist";
  if (std::ifstream f(run_pipeline); f) {
    try {
      if (json m = train_model_in(json::parse(f)); !m.is_null()) {
        out.spec = with_nc(m, meta);
        out.origin = run_pipeline.string();
        return out;
      }
      pipeline_problem = run_pipeline.string() + " has no train stage with a model";
    } catch (const std::exception& e) {
      pipeline_problem = run_pipeline.string() + " is not valid JSON";
    }
  }
  if (meta.contains("architecture") && meta["architecture"].is_string() && meta.contains("nc")) {
    // "yolo11n": the plugin name and its scale letter, what the sink's model reports.
    const std::string arch = meta["architecture"].get<std::string>();
    out.spec = {{"plugin", arch.substr(0, arch.size() - 1)},
                {"params", {{"scale", arch.substr(arch.size() - 1)}, {"nc", meta["nc"]}}}};
    out.origin = checkpoint_path + " (its architecture name " + arch + ")";
    return out;
  }
  throw InvalidInput(checkpoint_path + " does not say which model it holds: no 'model' or 'pipeline' entry (written by "
                     "an older yoloflow), and " + pipeline_problem + "; predict with a checkpoint from `yoloflow train`, "
                     "kept in its run folder (RUN/weights/best.pt beside RUN/pipeline.json)");
}

struct Predictor::Impl {
  std::unique_ptr<Model> model;
  std::unique_ptr<Augmentation> letterbox;
  torch::Device device{torch::kCPU};
  CheckpointModel described;
  NmsOptions nms;
  torch::Tensor class_mask;  // (nc) 1 for the kept classes; undefined = all
  std::string weights_kind;  // "EMA" or "raw"
  int imgsz = 640;
};

Predictor::Predictor(const Registry& registry, const std::string& weights, const PredictOptions& options)
    : impl_(std::make_unique<Impl>()) {
  auto& m = *impl_;
  if (!fs::exists(weights)) throw InvalidInput("--weights " + weights + ": no such file");
  if (fs::is_directory(weights)) {
    throw InvalidInput("--weights " + weights + ": is a folder; give a checkpoint such as " + weights +
                       "/weights/best.pt");
  }
  const Checkpoint ck = load_checkpoint(weights);
  m.described = describe_checkpoint_model(ck.meta, weights);
  m.device = pick_device(options.device);

  StageContext ctx;
  ctx.node = "predict";
  ctx.device = m.device.str();
  const std::string plugin = m.described.spec.value("plugin", std::string());
  if (!registry.find(Kind::Model, plugin)) {
    throw Error(weights + " holds a '" + plugin + "' model, but no model plugin of that name is loaded "
                "(check `yoloflow plugins`)", kExitPluginError);
  }
  m.model = create_component<Model>(registry, Kind::Model, m.described.spec, "model of " + m.described.origin, ctx);
  // Ultralytics' best.pt is its EMA: what validation measured.
  const TensorList& tensors = ck.ema.empty() ? ck.model : ck.ema;
  m.weights_kind = ck.ema.empty() ? "raw" : "EMA";
  load_weights(m.model->module(), tensors, weights);
  m.model->module().to(m.device);
  m.model->module().eval();

  const DetectionHead head = m.model->head();
  if (!m.described.names.empty() && static_cast<int>(m.described.names.size()) != head.nc) {
    throw InvalidInput(weights + ": names " + std::to_string(m.described.names.size()) + " classes, its model has nc=" +
                       std::to_string(head.nc));
  }
  // Unnamed classes are called by their number.
  for (int c = static_cast<int>(m.described.names.size()); c < head.nc; ++c) m.described.names.push_back(std::to_string(c));
  for (int c : options.classes) {
    if (c < 0 || c >= head.nc) {
      throw InvalidInput("--classes: " + std::to_string(c) + " is not a class of this model (0.." +
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
  m.imgsz = std::max(stride, (options.imgsz + stride - 1) / stride * stride);
  // Validation's letterbox, with minimal padding to the stride (Ultralytics' rectangular
  // inference for single images): fewer pixels, the same boxes.
  const json lb = {{"size", m.imgsz}, {"auto", true}, {"stride", stride}};
  ctx.imgsz = m.imgsz;
  m.letterbox.reset(static_cast<Augmentation*>(
      create_configured(registry, Kind::Augmentation, "letterbox", lb, "predict.letterbox", ctx).release()));
  m.nms.conf = options.conf;
  m.nms.iou = options.iou;
  m.nms.max_det = options.max_det;
}

Predictor::~Predictor() = default;

const std::vector<std::string>& Predictor::names() const { return impl_->described.names; }
int Predictor::imgsz() const { return impl_->imgsz; }

std::string Predictor::description() const {
  std::ostringstream os;
  os << impl_->model->architecture() << " (" << impl_->model->head().nc << " classes, " << impl_->weights_kind
     << " weights) on " << impl_->device.str() << ", imgsz " << impl_->imgsz;
  return os.str();
}

ImagePrediction Predictor::predict(const cv::Mat& image) {
  auto& m = *impl_;
  if (image.empty() || image.type() != CV_8UC3) throw InvalidInput("predict: needs an 8-bit 3-channel image");
  ImagePrediction out;
  out.width = image.cols;
  out.height = image.rows;

  auto t0 = Clock::now();
  Sample s;
  s.image = image;
  Rng rng(0);
  NoSamples loader;
  AugmentContext ac{rng, loader, m.imgsz, 0};
  m.letterbox->apply(s, ac);
  const int h = s.image.rows, w = s.image.cols;
  auto pixels = torch::empty({1, h, w, 3}, torch::kUInt8);
  cv::Mat rgb(h, w, CV_8UC3, pixels.data_ptr<std::uint8_t>());
  cv::cvtColor(s.image, rgb, cv::COLOR_BGR2RGB);
  torch::NoGradGuard no_grad;
  auto x = pixels.to(m.device).permute({0, 3, 1, 2}).to(torch::kFloat).div_(255.0);
  out.preprocess_ms = ms_since(t0);

  t0 = Clock::now();
  Detections det = m.model->decode(m.model->forward_train(x));
  if (m.device.is_cuda()) torch::cuda::synchronize();  // the time of the work, not of its launch
  out.inference_ms = ms_since(t0);

  t0 = Clock::now();
  if (m.class_mask.defined()) det.scores = det.scores * m.class_mask;  // other classes never pass conf
  const torch::Tensor kept = non_max_suppression(det, m.nms).at(0);
  // Letterbox geometry back to the original pixels: original = (input - pad) / ratio.
  const Geometry& g = s.geometry;
  const auto a = kept.accessor<float, 2>();
  for (std::int64_t i = 0; i < kept.size(0); ++i) {
    Detection d;
    auto map = [](float v, double pad, double ratio, int limit) {
      return static_cast<float>(std::clamp((v - pad) / ratio, 0.0, static_cast<double>(limit)));
    };
    d.x1 = map(a[i][0], g.pad_x, g.ratio_x, out.width);
    d.y1 = map(a[i][1], g.pad_y, g.ratio_y, out.height);
    d.x2 = map(a[i][2], g.pad_x, g.ratio_x, out.width);
    d.y2 = map(a[i][3], g.pad_y, g.ratio_y, out.height);
    d.confidence = a[i][4];
    d.cls = static_cast<int>(a[i][5]);
    out.detections.push_back(d);
  }
  out.postprocess_ms = ms_since(t0);
  return out;
}

}  // namespace yoloflow::core
